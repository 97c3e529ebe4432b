package server_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/swarmrt/swarm"
	"github.com/swarmrt/swarm/model/scripted"
	"github.com/swarmrt/swarm/server"
)

// Serve a runtime over HTTP, start a run and wait for its result.
func ExampleNew() {
	rt, _ := swarm.New(swarm.Config{Model: scripted.New(scripted.Script{"greeter": {scripted.Text("hello, Ann")}})})
	defer rt.Close()
	_ = rt.Register(swarm.Define[string, string]("greeter", "Greets people", nil))

	srv, err := server.New(rt, server.Options{})
	if err != nil {
		panic(err)
	}
	ts := httptest.NewServer(srv)
	defer ts.Close()
	defer srv.CloseStreams()

	res, _ := http.Post(ts.URL+"/v1/swarms/greeter/runs", "application/json", strings.NewReader(`{"id": "g1", "input": "Ann"}`))
	res.Body.Close()
	fmt.Println(res.Status)

	res, _ = http.Get(ts.URL + "/v1/runs/g1?wait=10s")
	body, _ := io.ReadAll(res.Body)
	res.Body.Close()
	fmt.Println(res.Status, strings.Contains(string(body), `"result":"hello, Ann"`))
	// Output:
	// 201 Created
	// 200 OK true
}
