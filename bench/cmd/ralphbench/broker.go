package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/ralphd/ralphd/bench"
	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/git"
	"github.com/ralphd/ralphd/internal/guard"
	"github.com/ralphd/ralphd/internal/sandbox"
)

// brokerResult is section 6: one bd call three ways, and the sandbox's
// start-up.
type brokerResult struct {
	Calls                   int
	Direct, Wrapper, Broker []time.Duration // per call: the real bd alone, through the exec wrapper, through the broker
	Small                   []time.Duration // through the broker with the small client (ralphd-bd); nil when not built
	Sandbox                 string          // why the sandbox was not measured, when it was not
	Starts                  int
	Bare, Sandboxed         []time.Duration // per start: `true` alone, `true` under bwrap with a BUILD layout
	// MinBwrap is `true` under bwrap with the host's root read-only and
	// nothing else (bwrap's own cost, the baseline of the layers), Netted
	// under the BUILD layout with a network namespace of its own and the
	// allowlist proxy's forwarder (network = "allowlist", the default).
	MinBwrap, Netted          []time.Duration
	NetCommandIn              string
	NetSkipped                string // why Netted was not measured, when it was not
	Argv                      []string
	Command, SandboxCommandIn string
}

// measureBroker runs the same bd call n times each way, interleaved so that
// all three see the same machine: the real bd by path, the exec wrapper
// (guard.Install, the transport before the broker) and the broker
// (guard.Serve, with this process as ralphd). Then it starts `true` under
// bwrap with a BUILD iteration's layout, against `true` alone.
func measureBroker(ctx context.Context, e *benchEnv, n int, say func(string, ...any)) (*brokerResult, error) {
	proj := filepath.Join(e.work, "broker-project")
	if err := e.makeProject(ctx, proj, 3); err != nil {
		return nil, err
	}
	defer os.RemoveAll(proj)
	r := &brokerResult{Calls: n, Argv: []string{"show", "b-1", "--json"}}
	if out, err := run(ctx, e.env(), proj, e.bd(), "list", "--json"); err == nil {
		// The stand-in's ids are random; show the first issue.
		if i := strings.Index(out, `"id": "`); i >= 0 {
			id, _, _ := strings.Cut(out[i+len(`"id": "`):], `"`)
			r.Argv[1] = id
		}
	}
	setup := guard.Setup{Self: e.ralphd(), Mode: guard.ModeBuild, RealBD: e.bd(), RunID: "bench", Iteration: 1, Env: e.env()}
	wdir, bdir := filepath.Join(e.work, "broker-wrapper"), filepath.Join(e.work, "broker-broker")
	for _, d := range []string{wdir, bdir} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, fmt.Errorf("make %s: %w", d, err)
		}
		defer os.RemoveAll(d)
	}
	wrapper, err := guard.Install(wdir, setup)
	if err != nil {
		return nil, err
	}
	brk, err := guard.Serve(ctx, bdir, setup)
	if err != nil {
		return nil, err
	}
	defer brk.Close()
	brk.SetLeader(os.Getpid()) // the clients are this process's children
	var small *guard.Session
	if client := filepath.Join(e.bin, "ralphd-bd"); fileExists(client) {
		sdir := filepath.Join(e.work, "broker-small")
		if err := os.MkdirAll(sdir, 0o700); err != nil {
			return nil, err
		}
		defer os.RemoveAll(sdir)
		ss := setup
		ss.Client = client
		if small, err = guard.Serve(ctx, sdir, ss); err != nil {
			return nil, err
		}
		defer small.Close()
		small.SetLeader(os.Getpid())
	}
	ways := []struct {
		bin string
		env []string
		out *[]time.Duration
	}{
		{e.bd(), e.env(), &r.Direct},
		{filepath.Join(wrapper.BinDir(), "bd"), e.env(append([]string{e.pathWith(wrapper.BinDir())}, wrapper.Env()...)...), &r.Wrapper},
		{filepath.Join(brk.BinDir(), "bd"), e.env(append([]string{e.pathWith(brk.BinDir())}, brk.Env()...)...), &r.Broker},
	}
	if small != nil {
		ways = append(ways, struct {
			bin string
			env []string
			out *[]time.Duration
		}{filepath.Join(small.BinDir(), "bd"), e.env(append([]string{e.pathWith(small.BinDir())}, small.Env()...)...), &r.Small})
	}
	say("broker: %d calls of `bd %s`, each three ways", n, strings.Join(r.Argv, " "))
	for i := range n {
		for _, w := range ways {
			cmd := command(ctx, w.env, proj, w.bin, r.Argv...)
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				return nil, fmt.Errorf("call %d through %s: %w\n%s", i, w.bin, err, tail(string(out), 500))
			}
			*w.out = append(*w.out, time.Since(start))
		}
	}
	if got := len(brk.Calls()); got != n || (small != nil && len(small.Calls()) != n) {
		return nil, fmt.Errorf("the broker audited %d calls, want %d", got, n)
	}

	s := sandbox.Probe(ctx, "", true)
	if !s.OK() {
		r.Sandbox = s.Err.Error()
		return r, nil
	}
	where, err := git.Repo{Dir: proj}.Layout(ctx, "")
	if err != nil {
		return nil, err
	}
	gitDir, common := where.GitDir, where.CommonDir
	home, _ := os.UserHomeDir()
	dirs, files := agent.Writable(agent.Claude{}, agent.Home{Dir: home, Getenv: os.Getenv})
	layout := sandbox.BuildLayout(sandbox.Project{
		WorkTree: proj, GitDir: gitDir, GitCommonDir: common, StateDir: filepath.Join(e.work, "state"), Scratch: bdir,
		ReadOnly: brk.ReadOnly(), AgentDirs: dirs, AgentFiles: files, Getenv: os.Getenv,
	})
	argv := layout.Args(s.Path, []string{"/bin/true"})
	minimal := []string{s.Path, "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc", "--", "/bin/true"}
	series := []struct {
		argv []string
		out  *[]time.Duration
	}{{[]string{"/bin/true"}, &r.Bare}, {minimal, &r.MinBwrap}, {argv, &r.Sandboxed}}
	if netted, stop, err := nettedArgs(s.Path, layout, bdir, e.ralphd()); err != nil {
		r.NetSkipped = err.Error()
	} else {
		defer stop()
		r.NetCommandIn = strings.Join(netted[:1], " ") + " … (" + fmt.Sprint(len(netted)) + " arguments) /bin/true"
		series = append(series, struct {
			argv []string
			out  *[]time.Duration
		}{netted, &r.Netted})
	}
	r.Starts = max(n/4, 10)
	r.SandboxCommandIn = strings.Join(argv[:1], " ") + " … (" + fmt.Sprint(len(argv)) + " arguments) /bin/true"
	say("broker: %d starts of `true`, alone and under bwrap (%d ways)", r.Starts, len(series)-1)
	for range r.Starts {
		for _, w := range series {
			cmd := command(ctx, e.env(), proj, w.argv[0], w.argv[1:]...)
			start := time.Now()
			if out, err := cmd.CombinedOutput(); err != nil {
				return nil, fmt.Errorf("start %s: %w\n%s", w.argv[0], err, tail(string(out), 500))
			}
			*w.out = append(*w.out, time.Since(start))
		}
	}
	return r, nil
}

// nettedArgs is layout's command for argv /bin/true with a network
// namespace of its own and the way out a BUILD iteration has by default:
// the allowlist proxy (listening here, allowing nothing) and ralphd's
// forwarder inside. stop closes the proxy.
func nettedArgs(bwrap string, layout sandbox.Layout, dir, ralphd string) ([]string, func(), error) {
	if s := sandbox.Probe(context.Background(), "", true); !s.OK() {
		return nil, nil, fmt.Errorf("no network namespace: %w", s.Err)
	}
	sock, err := sandbox.ProxyDir(dir)
	if err != nil {
		return nil, nil, err
	}
	allow, err := sandbox.ParseAllow(nil)
	if err != nil {
		return nil, nil, err
	}
	px, err := sandbox.ListenProxy(sock, allow, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	layout.Net = &sandbox.Net{Socket: px.Socket(), Forwarder: ralphd}
	stop := func() { _ = px.Close(); _ = os.RemoveAll(filepath.Dir(sock)) }
	return layout.Args(bwrap, []string{"/bin/true"}), stop, nil
}

// p95 returns the 95th percentile of ds (nearest rank).
func p95(ds []time.Duration) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := (95*len(s)+99)/100 - 1
	return s[max(i, 0)]
}

// brokerGoal is the most the broker may add to a bd call: a tenth of what
// the real bd 1.0.5 itself takes at its fastest (100 ms).
const brokerGoal = 10 * time.Millisecond

// sandboxGoal is the most the sandbox may add to an iteration's start.
const sandboxGoal = 50 * time.Millisecond

func brokerSection(r *brokerResult, cmd string) bench.Section {
	s := bench.Section{Title: "7. The bd broker and the sandbox"}
	med := bench.MedianDuration
	addB, addW := med(r.Broker)-med(r.Direct), med(r.Wrapper)-med(r.Direct)
	addB95, addW95 := p95(r.Broker)-p95(r.Direct), p95(r.Wrapper)-p95(r.Direct)
	small := "not built"
	if len(r.Small) > 0 {
		addS := med(r.Small) - med(r.Direct)
		small = fmt.Sprintf("+%s; +%s", fmtDur(addS), fmtDur(p95(r.Small)-p95(r.Direct)))
		s.Figures = append(s.Figures, bench.Figure{ID: "7a", Name: "bd call through the broker, small client ralphd-bd installed, added to the real bd (median; p95)",
			Value: small, Goal: "≤ " + fmtDur(brokerGoal), Verdict: bench.Judge(addS <= brokerGoal), Command: cmd})
	}
	s.Figures = append(s.Figures,
		bench.Figure{ID: "7b", Name: "bd call through the broker, ralphd itself as the client, added to the real bd (median; p95)",
			Value: fmt.Sprintf("+%s; +%s (the exec wrapper it replaces: +%s; +%s)", fmtDur(addB), fmtDur(addB95), fmtDur(addW), fmtDur(addW95)),
			Goal:  "≤ the exec wrapper's", Verdict: bench.Judge(addB <= addW), Command: cmd},
		bench.Figure{ID: "7c", Name: "broker (ralphd as the client) ÷ exec wrapper, whole call (median)",
			Value: fmt.Sprintf("%.2f×", bench.Ratio(float64(med(r.Broker)), float64(med(r.Wrapper)))), Command: cmd},
	)
	smallRow := "| broker, small client `ralphd-bd` | not built | |"
	if len(r.Small) > 0 {
		smallRow = fmt.Sprintf("| broker, small client `ralphd-bd` | %s | %s |", fmtDur(med(r.Small)), fmtDur(p95(r.Small)))
	}
	var b strings.Builder
	fmt.Fprintf(&b, `**Method.** The same call, `+"`bd %s`"+` on the stand-in, %d times each way, interleaved (direct, wrapper,
broker, broker with the small client, direct, …) so that all see the same machine: the real bd by its path;
through the exec wrapper ralphd put on agents' PATH before the broker (`+"`guard.Install`"+`: a shell script that runs
`+"`ralphd bd-guard`"+`, which decides and runs bd as its child); and through the broker (`+"`guard.Serve`"+`), whose client
sends the call over a unix socket to the process that holds the broker (here ralphbench itself, as ralphd does),
which decides, runs bd, and streams its output back. The client is either ralphd itself (`+"`ralphd bd-client`"+`,
behind a two-line script: what agents get when only ralphd is installed) or the small `+"`ralphd-bd`"+` binary
(3.7 MB, linked as the agent's bd: what they get when it is installed beside ralphd). "Added" is each way's
figure minus the direct call's.

| way | median | p95 |
|---|---|---|
| real bd, direct | %s | %s |
| exec wrapper | %s | %s |
| broker, ralphd as the client | %s | %s |
%s

Real bd 1.0.5 takes 100 to 300 ms a call (the contract README); the goal keeps the broker under a tenth of its
fastest call. With ralphd itself as the client, each call pays ralphd's start-up (`+"`sh`"+`, then a 23 MB Go program
whose package initialisation alone takes about 7 ms here), as the exec wrapper did.
`, strings.Join(r.Argv, " "), r.Calls, fmtDur(med(r.Direct)), fmtDur(p95(r.Direct)), fmtDur(med(r.Wrapper)), fmtDur(p95(r.Wrapper)),
		fmtDur(med(r.Broker)), fmtDur(p95(r.Broker)), smallRow)
	if r.Sandbox != "" {
		fmt.Fprintf(&b, "\nThe sandbox was not measured: %s.\n", r.Sandbox)
		s.Body = b.String()
		return s
	}
	add := med(r.Sandboxed) - med(r.Bare)
	s.Figures = append(s.Figures, bench.Figure{ID: "7d", Name: "sandbox start-up per iteration (bwrap with a BUILD layout, median)",
		Value: fmt.Sprintf("+%s (p95 +%s)", fmtDur(add), fmtDur(p95(r.Sandboxed)-p95(r.Bare))),
		Goal:  "≤ " + fmtDur(sandboxGoal), Verdict: bench.Judge(add <= sandboxGoal), Command: cmd})
	layers := med(r.Sandboxed) - med(r.MinBwrap)
	s.Figures = append(s.Figures, bench.Figure{ID: "7e", Name: "the BUILD layout's layers over bwrap alone (private /tmp and /run, masks, unshared ipc/uts/cgroup, binds; median)",
		Value: fmt.Sprintf("+%s (%.2f× bwrap alone)", fmtDur(layers), bench.Ratio(float64(med(r.Sandboxed)), float64(med(r.MinBwrap)))), Command: cmd})
	netRow := "not measured: " + r.NetSkipped
	if len(r.Netted) > 0 {
		addN := med(r.Netted) - med(r.Sandboxed)
		netRow = fmtDur(med(r.Netted))
		s.Figures = append(s.Figures, bench.Figure{ID: "7f", Name: "network isolation (own namespace, allowlist proxy, ralphd's forwarder) over the BUILD layout (median)",
			Value: fmt.Sprintf("+%s (%.2f×)", fmtDur(addN), bench.Ratio(float64(med(r.Netted)), float64(med(r.Sandboxed)))),
			Goal:  "≤ " + fmtDur(sandboxGoal), Verdict: bench.Judge(med(r.Netted)-med(r.Bare) <= sandboxGoal), Command: cmd})
	}
	fmt.Fprintf(&b, `
**Sandbox.** `+"`/bin/true`"+`, %d times each way, interleaved: alone; under bwrap with the host's root read-only
and nothing else (bwrap's own cost, the baseline of the layers); under bwrap with the layout of a BUILD iteration on
the scratch project (`+"`%s`"+`, network shared: `+"`network = \"open\"`"+`); and the same with a network namespace of
its own, ralphd's forwarder inside and the allowlist proxy outside (`+"`network = \"allowlist\"`"+`, the default).
An iteration pays this once, when its agent starts; the agent then runs at native speed (bwrap only sets up
mounts and namespaces). The goal of 7f bounds the whole start-up over `+"`true`"+` alone.

| way | median |
|---|---|
| alone | %s |
| bwrap alone | %s |
| BUILD layout | %s |
| BUILD layout, own network | %s |
`, r.Starts, r.SandboxCommandIn, fmtDur(med(r.Bare)), fmtDur(med(r.MinBwrap)), fmtDur(med(r.Sandboxed)), netRow)
	s.Body = b.String()
	return s
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
