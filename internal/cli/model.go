package cli

import (
	"github.com/swarmrt/swarm/model"
)

func openModel(spec string) (model.Model, error) { return model.Open(spec) }
