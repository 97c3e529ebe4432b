package dashboard

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// The drawing of a workflow on its run's Nodes tab is laid out here, from
// the workflow's shape, top to bottom: a sequence is a column, a parallel
// step or a for-each fans out from a fork to its branches side by side and
// in again to its join, a route's alternatives hang dashed from its pick,
// a loop is a frame whose back edge carries its bound, and a graph's
// nodes go in layers from its start node, forward edges down and the
// edges of its cycles up on the right, each edge with its condition.

// Sizes of the drawing (in SVG user units).
const (
	wfBoxW   = 210 // a node's box
	wfBoxH   = 46
	wfGapX   = 24 // between branches, or nodes of a layer
	wfGapY   = 30 // between steps of a sequence
	wfPad    = 12 // inside a frame
	wfTitleH = 24 // a frame's title
	wfPillH  = 20 // a fork, join or pick
	wfRowGap = 50 // between a graph's layers (room for edge labels)
	wfLane   = 14 // between the lanes of a graph's back edges
	wfLabelW = 96 // room right of a loop's back edge or a graph's lanes
)

// wfEdge is an edge of the drawing: Class is "wf-seq" (a sequence),
// "wf-fork" and "wf-join" (a parallel step's), "wf-alt" (a route's
// alternative), "wf-back" (a loop's next round), "wf-flow" and
// "wf-cycle" (a graph's forward edges and those back up a cycle).
type wfEdge struct {
	From, To string
	Path     string
	Class    string
	Label    string
	// LX, LY place the label.
	LX, LY int
}

// wfFrame is a step that holds others, drawn as a frame around them.
type wfFrame struct {
	*wfNode
	W, H  int
	Title string
}

// wfPill is a fork, a join or a route's pick.
type wfPill struct {
	X, Y, W int
	Text    string
	Class   string
}

// drawing lays the workflow's nodes out.
type drawing struct {
	children map[string][]*wfNode
	frames   []wfFrame
	edges    []wfEdge
	pills    []wfPill
	boxes    []*wfNode
}

// block is a laid-out part of the drawing: its size, and draw puts it at
// x, y (entered at the middle of its top, left at the middle of its
// bottom).
type block struct {
	w, h int
	draw func(x, y int)
}

// layout draws w's nodes.
func (w *workflowData) layout() {
	d := &drawing{children: map[string][]*wfNode{}}
	for _, n := range w.Nodes {
		d.children[n.Parent] = append(d.children[n.Parent], n)
	}
	b := d.seq(d.children[""])
	b.draw(8, 8)
	w.Width, w.Height = b.w+16, b.h+16
	w.Frames, w.Edges, w.Pills, w.Boxes = d.frames, d.edges, d.pills, d.boxes
}

// seq lays ns out as a sequence: a column, each step's edge to the next.
func (d *drawing) seq(ns []*wfNode) block {
	var bs []block
	w, h := 0, 0
	for i, n := range ns {
		b := d.node(n)
		bs = append(bs, b)
		w = max(w, b.w)
		h += b.h
		if i > 0 {
			h += wfGapY
		}
	}
	return block{w: w, h: h, draw: func(x, y int) {
		cx := x + w/2
		for i, b := range bs {
			if i > 0 {
				d.edge(ns[i-1].Key, ns[i].Key, "wf-seq", fmt.Sprintf("M%d %d V%d", cx, y-wfGapY, y))
			}
			b.draw(cx-b.w/2, y)
			y += b.h + wfGapY
		}
	}}
}

// node lays n out: a box, or a frame around the steps it holds.
func (d *drawing) node(n *wfNode) block {
	kids := d.children[n.Key]
	if len(kids) == 0 {
		return block{w: wfBoxW, h: wfBoxH, draw: func(x, y int) {
			n.X, n.Y, n.W, n.H = x, y, wfBoxW, wfBoxH
			d.boxes = append(d.boxes, n)
		}}
	}
	switch n.Kind {
	case "parallel", "foreach", "route":
		return d.fan(n, kids)
	case "loop":
		return d.loop(n, kids)
	case "graph":
		return d.graph(n, kids)
	}
	// A named sequence, or a step of a kind this drawing does not know:
	// its steps in a column.
	body := d.seq(kids)
	return d.frame(n, body.w, body.h, 0, func(x, y int) { body.draw(x, y) })
}

// frame is a block of n's frame around an inner part of iw by ih (and
// extra room on its right), which draw puts at x, y. The edge from the
// frame's top to the inner part and from it to the frame's bottom are
// drawn.
func (d *drawing) frame(n *wfNode, iw, ih, right int, draw func(x, y int)) block {
	title := n.Name + " · " + n.Kind + " · " + n.State
	w := max(iw+right, textW(title)) + 2*wfPad
	h := wfTitleH + wfGapY/2 + ih + wfGapY/2 + 4
	return block{w: w, h: h, draw: func(x, y int) {
		d.frames = append(d.frames, wfFrame{wfNode: n, W: w, H: h, Title: title})
		n.X, n.Y, n.W, n.H = x, y, w, h
		ix, iy := x+wfPad+(w-2*wfPad-right-iw)/2, y+wfTitleH+wfGapY/2
		cx := ix + iw/2
		d.edge(n.Key, "", "wf-seq", fmt.Sprintf("M%d %d V%d", cx, y+wfTitleH, iy))
		d.edge("", n.Key, "wf-seq", fmt.Sprintf("M%d %d V%d", cx, iy+ih, y+h))
		draw(ix, iy)
	}}
}

// fan lays out a parallel step, a for-each or a route: its branches side
// by side between a fork (a route's pick) and a join (a route's end).
func (d *drawing) fan(n *wfNode, kids []*wfNode) block {
	var groups [][]*wfNode // the branches: a for-each has one
	for i, k := range kids {
		if i == 0 || n.Kind != "foreach" && k.Branch != kids[i-1].Branch {
			groups = append(groups, nil)
		}
		groups[len(groups)-1] = append(groups[len(groups)-1], k)
	}
	fork, join, class := "fork", "join: "+n.Join, "wf-fork"
	switch n.Kind {
	case "foreach":
		fork, join = "for each element", "join: all, in order"
	case "route":
		fork, join, class = "pick: a Go function", "one of "+strconv.Itoa(len(groups)), "wf-alt"
		if n.Agent != "" {
			fork = "pick: router " + n.Agent
		}
	}
	var cols []block
	iw, ih := 0, 0
	for i, g := range groups {
		b := d.seq(g)
		cols = append(cols, b)
		iw += b.w
		if i > 0 {
			iw += wfGapX
		}
		ih = max(ih, b.h)
	}
	iw = max(iw, textW(fork)+24, textW(join)+24)
	total := wfPillH + wfGapY + ih + wfGapY + wfPillH
	return d.frame(n, iw, total, 0, func(x, y int) {
		cx := x + iw/2
		d.pill(cx, y, fork, "wf-pill-fork")
		by, jy := y+wfPillH+wfGapY, y+wfPillH+wfGapY+ih+wfGapY
		d.pill(cx, jy, join, "wf-pill-join")
		bx := x + (iw-colsW(cols))/2
		for i, b := range cols {
			bcx := bx + b.w/2
			g := groups[i]
			label := ""
			if n.Kind == "route" {
				label = g[0].Name
			}
			e := d.edge(n.Key, g[0].Key, class, fmt.Sprintf("M%d %d V%d H%d V%d", cx, y+wfPillH, by-wfGapY/2, bcx, by))
			if n.Kind == "foreach" {
				e.Label = "× each"
			} else {
				e.Label = label
			}
			e.LX, e.LY = bcx+4, by-4
			d.edge(g[len(g)-1].Key, n.Key, strings.Replace(class, "fork", "join", 1), fmt.Sprintf("M%d %d V%d H%d V%d", bcx, by+b.h, jy-wfGapY/2, cx, jy))
			b.draw(bx, by)
			bx += b.w + wfGapX
		}
	})
}

// colsW is the width of blocks side by side.
func colsW(bs []block) int {
	w := 0
	for i, b := range bs {
		if i > 0 {
			w += wfGapX
		}
		w += b.w
	}
	return w
}

// loop lays out a loop: its body, and a back edge on its right from the
// body's end to its start that says the bound and what ends it.
func (d *drawing) loop(n *wfNode, kids []*wfNode) block {
	body := d.seq(kids)
	until := "until a Go predicate"
	if n.Agent != "" {
		until = "until " + n.Agent + " says done"
	}
	label := "next round, ≤ " + strconv.Itoa(n.Bound) + " · " + until
	return d.frame(n, body.w, body.h, 24+textW(label), func(x, y int) {
		cx, lane := x+body.w/2, x+body.w+16
		e := d.edge(n.Key, n.Key, "wf-back", fmt.Sprintf("M%d %d V%d H%d V%d H%d", cx, y+body.h, y+body.h+wfGapY/2-4, lane, y-wfGapY/2+4, cx))
		e.Label = label
		e.LX, e.LY = lane+6, y+body.h/2
		body.draw(x, y)
	})
}

// graph lays out a graph: its nodes in layers from its start, each layer
// a row; an edge to a later layer goes down, one back to the same or an
// earlier layer (a cycle) goes up a lane on the right.
func (d *drawing) graph(n *wfNode, kids []*wfNode) block {
	byKey := map[string]*wfNode{}
	start := kids[0]
	for _, k := range kids {
		byKey[k.Key] = k
		if k.Start {
			start = k
		}
	}
	// Edges back up a cycle: to a node on the path of a depth-first walk
	// from the start.
	back := map[[2]string]bool{}
	state := map[string]int{} // 1 on the path, 2 done
	var walk func(k *wfNode)
	walk = func(k *wfNode) {
		state[k.Key] = 1
		for _, to := range k.Next {
			m, ok := byKey[to]
			switch {
			case !ok:
			case state[to] == 1:
				back[[2]string{k.Key, to}] = true
			case state[to] == 0:
				walk(m)
			}
		}
		state[k.Key] = 2
	}
	walk(start)
	for _, k := range kids {
		if state[k.Key] == 0 {
			walk(k)
		}
	}
	// Layers: the longest path from the start along the other edges, in
	// the order of a walk that takes edges in their order.
	layer := map[string]int{}
	var order []*wfNode
	var visit func(k *wfNode)
	seen := map[string]bool{}
	visit = func(k *wfNode) {
		if seen[k.Key] {
			return
		}
		seen[k.Key] = true
		order = append(order, k)
	}
	queue := []*wfNode{start}
	for _, k := range kids {
		if k != start {
			queue = append(queue, k)
		}
	}
	// Kahn's order over the forward edges, the start first.
	indeg := map[string]int{}
	for _, k := range kids {
		for _, to := range k.Next {
			if _, ok := byKey[to]; ok && !back[[2]string{k.Key, to}] {
				indeg[to]++
			}
		}
	}
	for len(order) < len(kids) {
		var next *wfNode
		for _, k := range queue {
			if !seen[k.Key] && indeg[k.Key] == 0 {
				next = k
				break
			}
		}
		if next == nil { // cannot happen: the back edges break every cycle
			for _, k := range queue {
				if !seen[k.Key] {
					next = k
					break
				}
			}
		}
		visit(next)
		for _, to := range next.Next {
			if _, ok := byKey[to]; ok && !back[[2]string{next.Key, to}] {
				indeg[to]--
				layer[to] = max(layer[to], layer[next.Key]+1)
			}
		}
	}
	var rows [][]*wfNode
	for _, k := range order {
		l := layer[k.Key]
		for len(rows) <= l {
			rows = append(rows, nil)
		}
		rows[l] = append(rows[l], k)
	}
	rows = slices.DeleteFunc(rows, func(r []*wfNode) bool { return len(r) == 0 })
	blocks := map[string]block{}
	iw, ih := 0, 0
	var rowH []int
	for i, r := range rows {
		var bs []block
		h := 0
		for _, k := range r {
			b := d.node(k)
			blocks[k.Key] = b
			bs = append(bs, b)
			h = max(h, b.h)
		}
		iw = max(iw, colsW(bs))
		rowH = append(rowH, h)
		ih += h
		if i > 0 {
			ih += wfRowGap
		}
	}
	lanes := len(back)
	right := 0
	if lanes > 0 {
		right = 16 + wfLane*lanes + wfLabelW
	}
	return d.frame(n, iw, ih, right, func(x, y int) {
		// The frame's edge in goes to the start node.
		ry := y
		for i, r := range rows {
			var bs []block
			for _, k := range r {
				bs = append(bs, blocks[k.Key])
			}
			bx := x + (iw-colsW(bs))/2
			for _, k := range r {
				b := blocks[k.Key]
				b.draw(bx, ry+(rowH[i]-b.h)/2)
				bx += b.w + wfGapX
			}
			ry += rowH[i] + wfRowGap
		}
		if start.Y > y || start.X+start.W/2 != x+iw/2 {
			d.edge(n.Key, start.Key, "wf-flow", fmt.Sprintf("M%d %d V%d H%d V%d", x+iw/2, y, start.Y-8, start.X+start.W/2, start.Y))
		}
		lane := x + iw + 16
		for _, k := range order {
			for i, to := range k.Next {
				m, ok := byKey[to]
				if !ok {
					continue
				}
				label := ""
				if i < len(k.Labels) {
					label = k.Labels[i]
				}
				if back[[2]string{k.Key, to}] {
					// Out of k's bottom, under its layer to the lane, up
					// and into m's right side.
					y1, y2 := k.Y+k.H+8, m.Y+m.H/2
					e := d.edge(k.Key, to, "wf-cycle", fmt.Sprintf("M%d %d V%d H%d V%d H%d", k.X+k.W*3/4, k.Y+k.H, y1, lane, y2, m.X+m.W))
					e.Label, e.LX, e.LY = label, lane+4, (y1+y2)/2+4
					lane += wfLane
					continue
				}
				x1, y1, x2, y2 := k.X+k.W/2, k.Y+k.H, m.X+m.W/2, m.Y
				mid := (y1 + y2) / 2
				if y2-y1 > wfRowGap { // past a layer: a bend halfway down the gap below k
					mid = y1 + wfRowGap/2
				}
				class := "wf-flow"
				if k.Fork {
					class += " wf-fork"
				}
				if m.Join != "" {
					class += " wf-join"
				}
				e := d.edge(k.Key, to, class, fmt.Sprintf("M%d %d V%d H%d V%d", x1, y1, mid, x2, y2))
				e.Label, e.LX, e.LY = label, x2+4, y2-6
			}
		}
		// A join says how it joins the branches that meet there.
		for _, k := range order {
			if k.Join != "" {
				d.pill(k.X+k.W/2, k.Y+k.H+4, "join: "+k.Join, "wf-pill-join")
			}
		}
	})
}

// edge adds an edge and returns it, for its label.
func (d *drawing) edge(from, to, class, path string) *wfEdge {
	d.edges = append(d.edges, wfEdge{From: from, To: to, Class: class, Path: path})
	return &d.edges[len(d.edges)-1]
}

// pill adds a fork, join or pick centred on cx at y.
func (d *drawing) pill(cx, y int, text, class string) {
	w := textW(text) + 20
	d.pills = append(d.pills, wfPill{X: cx - w/2, Y: y, W: w, Text: text, Class: class})
}

// textW is about how wide text is at the drawing's 12px font.
func textW(text string) int { return 7 * len([]rune(text)) }

// Right is the x of the right side of n's box.
func (n *wfNode) Right() int { return n.X + n.W }

// Status is n's state as its box says it.
func (n *wfNode) Status() string {
	if n.State == nodeWaiting && n.Kind == "human" {
		return "waiting for a human"
	}
	return n.State
}

// Label is n's name, cut to fit its box.
func (n *wfNode) Label() string {
	if r := []rune(n.Name); len(r) > 22 {
		return string(r[:21]) + "…"
	}
	return n.Name
}

// Sub is the second line of n's box: its kind, its state and its visits.
func (n *wfNode) Sub() string {
	s := n.Kind + " · " + n.Status()
	if n.Visits > 1 {
		s += " ×" + strconv.Itoa(n.Visits)
	}
	return s
}

// LastChild is the last child run n started, "" when none.
func (n *wfNode) LastChild() string {
	if len(n.Children) == 0 {
		return ""
	}
	return n.Children[len(n.Children)-1]
}

// CX is the middle of the pill.
func (p wfPill) CX() int { return p.X + p.W/2 }
