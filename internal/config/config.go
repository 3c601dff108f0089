// Package config resolves ralphd's effective configuration from layered
// sources and remembers where each value came from.
//
// The order, highest first: command-line flags, RALPH_* environment
// variables, the project's .ralph/config.json, the global
// <XDG config home>/ralph/config.json, and built-in defaults. Every key is
// declared once, in fields, which drives flag registration, environment
// names, file validation and `ralphd config`.
package config

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/mergeq"
	"github.com/ralphd/ralphd/internal/sandbox"
)

type kind int

const (
	kindString kind = iota
	kindInt
	kindBool
	kindDuration
	kindFloat
)

func (k kind) String() string {
	return [...]string{"string", "integer", "boolean", "duration", "number"}[k]
}

// article is the kind with its indefinite article: "an integer", "a number".
func (k kind) article() string {
	if k == kindInt {
		return "an " + k.String()
	}
	return "a " + k.String()
}

// Field declares one configuration key.
type Field struct {
	Key     string   // the key in config.json, e.g. "iteration_timeout"
	Flag    string   // the command-line flag name, e.g. "iteration-timeout"
	Env     string   // the environment variable, e.g. "RALPH_ITERATION_TIMEOUT"
	Default string   // the default, as text
	Help    string   // one line of help
	Allowed []string // the allowed values, for enumerations
	Min     float64  // the smallest allowed number, for numeric kinds
	Max     float64  // the largest allowed whole number, when above 0
	Aliases []string // other flag names for the same key
	// DaemonOnly marks a key only `ralphd daemon` uses (its help starts
	// with "daemon: "); build and plan do not take it as a flag.
	DaemonOnly bool
	Secret     bool // the value is never printed (a token)
	List       bool // a comma-separated list; a JSON array of strings in a file
	kind       kind
}

func field(key string, k kind, def, help string, allowed ...string) Field {
	return Field{
		Key:     key,
		Flag:    strings.ReplaceAll(key, "_", "-"),
		Env:     "RALPH_" + strings.ToUpper(key),
		Default: def,
		Help:    help,
		Allowed: allowed,
		kind:    k,

		DaemonOnly: strings.HasPrefix(help, "daemon: "),
	}
}

// MaxWorkers bounds the workers key: each worker runs an agent in a
// worktree of its own.
const MaxWorkers = 64

// Fields returns every configuration key ralphd knows, in display order.
func Fields() []Field {
	return []Field{
		field("agent", kindString, agent.Names()[0], "agent backend", agent.Names()...),
		field("agent_cmd", kindString, "", "command line for the command agent backend, run with sh -c (implies agent=command)"),
		field("model", kindString, "", "model to ask the agent for (empty: the agent's default)"),
		list(field("agents", kindString, "", "agents to fall back on, in order, comma-separated: name or name:model, e.g. claude,codex:gpt-5 (empty: agent and model)")),
		field("bd", kindString, "bd", "the bd executable (name on PATH or absolute path)"),
		field("bd_contract_override", kindBool, "false", "run build and the daemon even on a bd version `ralphd doctor --bd` found to differ from what ralphd relies on"),
		field("scope", kindString, "", "work only on the children of this epic (bd ready --parent)"),
		atLeast1(field("max_stuck", kindInt, "3", "failed attempts before an issue is marked STUCK and skipped")),
		field("max_creates", kindInt, "10", "issues one BUILD iteration may create; the guard refuses more (0: no cap)"),
		field("iteration_timeout", kindDuration, "45m", "wall-clock limit for one agent run"),
		field("stop_grace", kindDuration, "30s", "time between SIGTERM and SIGKILL when stopping an agent"),
		field("log", kindBool, "false", "write a JSONL run log to the state dir"),
		atLeast1(field("log_retention", kindInt, "10", "how many run logs to keep")),
		atLeast1(field("report_retention", kindInt, "50", "how many end-of-run reports to keep")),
		field("prompt_dir", kindString, "", "directory with PROMPT_build.md / PROMPT_plan.md overrides (default .ralph/)"),
		field("verify", kindString, "", "verification command run after every BUILD iteration, with sh -c"),
		field("verify_timeout", kindDuration, "10m", "wall-clock limit for the verification command"),
		field("error_fingerprint_repeats", kindInt, "2", "same-error repeats on one issue before the strategy shifts"),
		field("no_progress_repeats", kindInt, "2", "no-progress repeats on one issue before the strategy shifts"),
		field("max_cost_usd", kindFloat, "0", "stop the run once its summed agent cost reaches this (0: no cap)"),
		withAliases(field("run_timeout", kindDuration, "0s", "wall-clock limit for the whole run (0: none)"), "timeout"),
		field("failure_branches", kindBool, "true", "commit a hard-stopped issue's work to a wip/ralph-fail-* branch"),
		field("push_failure_branches", kindBool, "false", "push failure branches to origin"),
		field("allow_dirty", kindBool, "false", "let BUILD start on a working tree with uncommitted changes"),
		between(field("workers", kindInt, "1", "BUILD workers at once, each in its own git worktree (README: Workers)"), 1, MaxWorkers),
		field("workers_remote", kindString, "", "git remote the workers' merge queue fetches from and pushes to, e.g. origin (empty: local only)"),
		field("integrate", kindString, mergeq.DefaultStrategy, "how the workers' merge queue lands rebased, verified work: ff fast-forwards the target (pushing it to workers_remote first, when set); branch pushes each issue's work to its own ralph/<issue> branch and merges nothing; pr does as branch and opens a pull request on the forge, the issue integrated once a person merges it", mergeq.StrategyNames()...),
		field("forge", kindString, "github", "integrate = pr: the forge pull requests are opened on: github (with your gh CLI and its login) or gitea (Gitea or Forgejo at forge_host, through its API with the token in ralphd's GITEA_TOKEN)", "github", "gitea"),
		field("forge_repo", kindString, "", "integrate = pr: the repository (owner/name) pull requests are opened in"),
		field("forge_host", kindString, "", "integrate = pr: a GitHub Enterprise host (gh's GH_HOST; empty: github.com), or with forge = gitea the server's URL (https://git.example.com)"),
		field("forge_poll", kindDuration, "60s", "integrate = pr: time between reads of each open pull request (3 conditional requests each)"),
		field("sandbox", kindString, "auto", "run the BUILD agent under bubblewrap: auto (when bwrap works here), bwrap (always; refuse to start without it), off", "auto", "bwrap", "off"),
		field("network", kindString, sandbox.NetSettings()[0], "the sandboxed BUILD agent's network: allowlist (out only through ralphd's proxy, to the agent's model API and network_allow) or open (the host's network, unfiltered)", sandbox.NetSettings()...),
		field("network_allow", kindString, "", "more hosts a sandboxed agent may reach, comma-separated: host (ports 443 and 80), host:port or *.domain, e.g. registry.npmjs.org,proxy.golang.org"),
		field("tracker_reads", kindString, "auto", "how judgements read the tracker: auto (incremental from 1,000 issues, else full), full (every issue, every time), incremental (what changed since the last reading, with a full reading at a bounded interval)", "auto", "full", "incremental"),
		atLeast1(field("tracker_full_every", kindInt, "20", "tracker_reads = incremental: readings of what changed between two full readings")),
		field("tracker_full_interval", kindDuration, "10m", "tracker_reads = incremental: longest time between two full readings (0: no limit but tracker_full_every)"),
		atLeast1(field("build_batch", kindInt, "10", "daemon: BUILD iterations before reconsidering planning")),
		field("plan_every", kindInt, "0", "daemon: plan every N BUILD iterations (0: off)"),
		field("poll", kindDuration, "60s", "daemon: fallback poll interval while idle"),
		field("fleet_lease", kindDuration, "2m", "daemon, bd server mode: how long the planner's lease on the shared tracker lasts unrenewed; daemons sharing the tracker plan one at a time (0: off)"),
		field("quota_backoff_max", kindDuration, "1h", "longest wait between retries when the agent is rate-limited or unusable"),
		// Dashboard, metrics and notifications (README "State, logs, dashboard and service").
		field("http", kindString, "", "daemon: serve the dashboard and /metrics on this address, e.g. 127.0.0.1:7777 (empty: off)"),
		secret(field("http_token", kindString, "", "bearer token for the dashboard; required to bind a non-loopback address and for control actions")),
		field("notify_cmd", kindString, "", "command run with sh -c and one JSON event on stdin for each notification"),
		field("notify_url", kindString, "", "URL each notification is POSTed to"),
		field("notify_format", kindString, "auto", "body of notify_url posts (auto: text for an ntfy topic, json otherwise)", "auto", "text", "json", "slack"),
		field("notify_events", kindString, "all", "notifications to send: all, or a comma-separated list of stuck, run_end, budget, agent_unusable, violation, quota_wait, idle_blocked, build_created"),
		field("notify_timeout", kindDuration, "30s", "wall-clock limit for one notify_cmd run or one notify_url try"),
	}
}

// list marks a field that holds a comma-separated list, which a config
// file may also give as a JSON array of strings.
func list(f Field) Field {
	f.List = true
	return f
}

// atLeast1 marks a whole-number field that must be 1 or more.
func atLeast1(f Field) Field {
	f.Min = 1
	return f
}

// between marks a whole-number field that must lie from lo to hi.
func between(f Field, lo, hi float64) Field {
	f.Min, f.Max = lo, hi
	return f
}

// secret marks a field whose value `ralphd config` must not print.
func secret(f Field) Field {
	f.Secret = true
	return f
}

func withAliases(f Field, aliases ...string) Field {
	f.Aliases = aliases
	return f
}

func lookupField(key string) (Field, bool) {
	for _, f := range Fields() {
		if f.Key == key {
			return f, true
		}
	}
	return Field{}, false
}

// Error is a configuration error: a bad key or value in a named source.
// It maps to the usage exit code.
type Error struct {
	Source string // "flag --x", "env RALPH_X", or a file path
	Key    string
	Msg    string
}

func (e *Error) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("%s: %s", e.Source, e.Msg)
	}
	return fmt.Sprintf("%s: %s: %s", e.Source, e.Key, e.Msg)
}

// Config is the effective configuration.
type Config struct {
	Agent    string
	AgentCmd string
	Model    string
	// Agents is the list of agents to run, in order of preference: the
	// agents key, or else agent with model as a list of one.
	Agents                  []AgentSpec
	BD                      string
	BDContractOverride      bool
	Scope                   string
	MaxStuck                int
	MaxCreates              int
	Workers                 int
	WorkersRemote           string
	Integrate               string
	Forge, ForgeRepo        string
	ForgeHost               string
	ForgePoll               time.Duration
	IterationTimeout        time.Duration
	StopGrace               time.Duration
	Log                     bool
	LogRetention            int
	ReportRetention         int
	PromptDir               string
	Verify                  string
	VerifyTimeout           time.Duration
	ErrorFingerprintRepeats int
	NoProgressRepeats       int
	MaxCostUSD              float64
	RunTimeout              time.Duration
	FailureBranches         bool
	PushFailureBranches     bool
	AllowDirty              bool
	Sandbox                 string
	Network                 string
	NetworkAllow            []string
	TrackerReads            string
	TrackerFullEvery        int
	TrackerFullInterval     time.Duration
	BuildBatch              int
	PlanEvery               int
	Poll                    time.Duration
	FleetLease              time.Duration
	QuotaBackoffMax         time.Duration
	HTTP                    string
	HTTPToken               string
	NotifyCmd               string
	NotifyURL               string
	NotifyFormat            string
	NotifyEvents            string
	NotifyTimeout           time.Duration

	values  map[string]string // effective raw values
	sources map[string]string // where each came from
}

// Source says where the effective value of key came from: "default",
// a file path, "env RALPH_X" or "flag --x".
func (c *Config) Source(key string) string { return c.sources[key] }

// Loader holds the inputs Load layers together.
type Loader struct {
	GlobalFile  string              // <XDG config home>/ralph/config.json; may not exist
	ProjectFile string              // <project>/.ralph/config.json; may not exist
	Getenv      func(string) string // the environment
	Flags       *flag.FlagSet       // parsed flags registered with BindFlags; may be nil
	// KeepGoing makes a broken config file not stop Load: its good keys
	// apply, and Load returns the configuration together with the file's
	// error. `ralphd config` and `status` use it to show what is broken.
	KeepGoing bool
}

// BindFlags registers a flag on fs for each named key (all keys when none
// are named). Load reads back only the flags the user set.
func BindFlags(fs *flag.FlagSet, keys ...string) {
	want := map[string]bool{}
	for _, k := range keys {
		want[k] = true
	}
	for _, f := range Fields() {
		if len(keys) > 0 && !want[f.Key] {
			continue
		}
		help := f.Help
		if len(f.Allowed) > 0 {
			help += " (" + strings.Join(f.Allowed, ", ") + ")"
		}
		switch {
		case f.kind == kindDuration:
			help += " (a `duration` such as 90s, 45m or 2h)"
		case f.kind == kindInt && f.Max > 0:
			help += fmt.Sprintf(" (a whole `number` from %g to %g)", f.Min, f.Max)
		case f.kind == kindInt && f.Min > 0:
			help += fmt.Sprintf(" (a whole `number`, at least %g)", f.Min)
		case f.kind == kindInt:
			help += " (a whole `number`)"
		case f.kind == kindFloat:
			help += " (a `number`)"
		}
		help += fmt.Sprintf(" [env %s]", f.Env)
		for i, name := range append([]string{f.Flag}, f.Aliases...) {
			h := help
			if i > 0 {
				h = "same as --" + f.Flag
			}
			switch f.kind {
			case kindBool:
				def, _ := strconv.ParseBool(f.Default)
				fs.Bool(name, def, h)
			case kindInt, kindFloat, kindDuration:
				fs.Var(&valueFlag{f: f, text: f.Default}, name, h)
			default:
				fs.String(name, f.Default, h)
			}
		}
	}
}

// RunKeys lists the keys build and plan take as flags: every key but the
// daemon's own (Field.DaemonOnly).
func RunKeys() []string {
	var ks []string
	for _, f := range Fields() {
		if !f.DaemonOnly {
			ks = append(ks, f.Key)
		}
	}
	return ks
}

// valueFlag is a numeric or duration flag that keeps the text the user
// gave and rejects what its field would (check): a number out of range,
// a duration without a unit.
type valueFlag struct {
	f    Field
	text string
}

func (d *valueFlag) String() string {
	if d == nil {
		return ""
	}
	return d.text
}

func (d *valueFlag) Set(v string) error {
	if _, err := check(d.f, v); err != nil {
		return err
	}
	d.text = v
	return nil
}

// Load resolves the effective configuration.
func Load(l Loader) (*Config, error) {
	c := &Config{values: map[string]string{}, sources: map[string]string{}}
	var fileErrs []error
	for _, f := range Fields() {
		c.values[f.Key] = f.Default
		c.sources[f.Key] = "default"
	}
	for _, path := range []string{l.GlobalFile, l.ProjectFile} {
		if path == "" {
			continue
		}
		if err := c.loadFile(path); err != nil {
			if !l.KeepGoing {
				return nil, err
			}
			fileErrs = append(fileErrs, err)
		}
	}
	if l.Getenv != nil {
		for _, f := range Fields() {
			if v := l.Getenv(f.Env); v != "" {
				if err := c.set(f, v, "env "+f.Env); err != nil {
					return nil, err
				}
			}
		}
	}
	if l.Flags != nil {
		var err error
		l.Flags.Visit(func(fl *flag.Flag) {
			f, ok := flagField(fl.Name)
			if !ok || err != nil {
				return
			}
			err = c.set(f, fl.Value.String(), "flag --"+fl.Name)
		})
		if err != nil {
			return nil, err
		}
	}
	// An agent command line means the command backend, unless the agent
	// was chosen explicitly at a higher or equal layer.
	if c.values["agent_cmd"] != "" && c.sources["agent"] == "default" {
		c.values["agent"] = "command"
		c.sources["agent"] = c.sources["agent_cmd"] + " (implied)"
	}
	if err := c.decode(); err != nil {
		return nil, err
	}
	return c, errors.Join(fileErrs...)
}

func flagField(name string) (Field, bool) {
	for _, f := range Fields() {
		if f.Flag == name || slices.Contains(f.Aliases, name) {
			return f, true
		}
	}
	return Field{}, false
}

func knownKeys() []string {
	var ks []string
	for _, f := range Fields() {
		ks = append(ks, f.Key)
	}
	return ks
}

// jsonText turns a JSON value into the text form set() validates.
func jsonText(f Field, raw json.RawMessage) (string, error) {
	switch f.kind {
	case kindBool:
		var b bool
		if err := json.Unmarshal(raw, &b); err != nil {
			return "", fmt.Errorf("want true or false, got %s", raw)
		}
		return strconv.FormatBool(b), nil
	case kindInt, kindFloat:
		var n json.Number
		if err := json.Unmarshal(raw, &n); err != nil {
			return "", fmt.Errorf("want %s, got %s", f.kind.article(), raw)
		}
		return n.String(), nil
	case kindDuration:
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			return "", fmt.Errorf("want a duration in a string, with its unit, such as \"90s\", \"45m\" or \"2h\" (units: ms, s, m, h), got %s", raw)
		}
		return s, nil
	default:
		var s string
		if err := json.Unmarshal(raw, &s); err == nil {
			return s, nil
		}
		var ss []string
		if f.List && json.Unmarshal(raw, &ss) == nil {
			for _, e := range ss {
				if strings.Contains(e, ",") {
					return "", fmt.Errorf("%q: an entry of the list cannot hold a comma", e)
				}
			}
			return strings.Join(ss, ","), nil
		}
		if f.List {
			return "", fmt.Errorf("want a string or an array of strings, got %s", raw)
		}
		return "", fmt.Errorf("want a string, got %s", raw)
	}
}

// set validates v for f and records it with its source.
func (c *Config) set(f Field, v, source string) error {
	v, err := check(f, v)
	if err != nil {
		return &Error{Source: source, Key: f.Key, Msg: err.Error()}
	}
	c.values[f.Key] = v
	c.sources[f.Key] = source
	return nil
}

// check validates v for f, and returns it as it is kept (a bool spelled
// true or false).
func check(f Field, v string) (string, error) {
	bad := func(msg string) (string, error) { return "", errors.New(msg) }
	switch f.kind {
	case kindBool:
		b, err := strconv.ParseBool(v)
		if err != nil {
			return bad(fmt.Sprintf("want true or false, got %q", v))
		}
		v = strconv.FormatBool(b)
	case kindInt:
		n, err := strconv.Atoi(v)
		if f.Max > 0 && (err != nil || float64(n) < f.Min || float64(n) > f.Max) {
			return bad(fmt.Sprintf("want a whole number from %g to %g, got %q", f.Min, f.Max, v))
		}
		if err != nil || float64(n) < f.Min {
			return bad(fmt.Sprintf("want a whole number of at least %g, got %q", f.Min, v))
		}
	case kindFloat:
		n, err := strconv.ParseFloat(v, 64)
		if err != nil || n < f.Min {
			return bad(fmt.Sprintf("want a number of at least %g, got %q", f.Min, v))
		}
	case kindDuration:
		d, err := parseDuration(v)
		if err != nil {
			return bad(err.Error())
		}
		if d < 0 {
			return bad(fmt.Sprintf("want a duration of 0 or more, got %q", v))
		}
	}
	if len(f.Allowed) > 0 {
		ok := false
		for _, a := range f.Allowed {
			ok = ok || a == v
		}
		if !ok {
			return bad(fmt.Sprintf("%q is not allowed; use one of: %s", v, strings.Join(f.Allowed, ", ")))
		}
	}
	return v, nil
}

// parseDuration accepts Go durations, which carry their unit ("90s",
// "1h30m"). A bare number other than 0 is refused: "5" could mean seconds
// or minutes.
func parseDuration(v string) (time.Duration, error) {
	d, err := time.ParseDuration(v)
	if err != nil {
		if _, nerr := strconv.ParseFloat(v, 64); nerr == nil {
			return 0, fmt.Errorf("%q has no unit: write it with one, such as %ss or %sm (units: ms, s, m, h)", v, v, v)
		}
		return 0, fmt.Errorf("want a duration such as 90s, 45m or 2h (units: ms, s, m, h), got %q", v)
	}
	return d, nil
}

// decode copies validated raw values into the typed fields.
func (c *Config) decode() error {
	str := func(k string) string { return c.values[k] }
	num := func(k string) int { n, _ := strconv.Atoi(c.values[k]); return n }
	flt := func(k string) float64 { n, _ := strconv.ParseFloat(c.values[k], 64); return n }
	boo := func(k string) bool { b, _ := strconv.ParseBool(c.values[k]); return b }
	dur := func(k string) time.Duration { d, _ := parseDuration(c.values[k]); return d }
	c.Agent = str("agent")
	c.AgentCmd = str("agent_cmd")
	c.Model = str("model")
	agents, err := parseAgents(str("agents"), c.Agent, c.Model)
	if err != nil {
		return &Error{Source: c.sources["agents"], Key: "agents", Msg: err.Error()}
	}
	c.Agents = agents
	c.BD = str("bd")
	c.BDContractOverride = boo("bd_contract_override")
	c.Scope = str("scope")
	c.MaxStuck = num("max_stuck")
	c.MaxCreates = num("max_creates")
	c.Workers = num("workers")
	c.WorkersRemote = str("workers_remote")
	c.Integrate = str("integrate")
	c.Forge = str("forge")
	c.ForgeRepo = str("forge_repo")
	c.ForgeHost = str("forge_host")
	c.ForgePoll = dur("forge_poll")
	c.IterationTimeout = dur("iteration_timeout")
	c.StopGrace = dur("stop_grace")
	c.Log = boo("log")
	c.LogRetention = num("log_retention")
	c.ReportRetention = num("report_retention")
	c.PromptDir = str("prompt_dir")
	c.Verify = str("verify")
	c.VerifyTimeout = dur("verify_timeout")
	c.ErrorFingerprintRepeats = num("error_fingerprint_repeats")
	c.NoProgressRepeats = num("no_progress_repeats")
	c.MaxCostUSD = flt("max_cost_usd")
	c.RunTimeout = dur("run_timeout")
	c.FailureBranches = boo("failure_branches")
	c.PushFailureBranches = boo("push_failure_branches")
	c.AllowDirty = boo("allow_dirty")
	c.Sandbox = str("sandbox")
	c.Network = str("network")
	c.NetworkAllow = nil
	for _, h := range strings.Split(str("network_allow"), ",") {
		if h = strings.TrimSpace(h); h != "" {
			c.NetworkAllow = append(c.NetworkAllow, h)
		}
	}
	if _, err := sandbox.ParseAllow(c.NetworkAllow); err != nil {
		return &Error{Source: c.sources["network_allow"], Key: "network_allow", Msg: err.Error()}
	}
	c.TrackerReads = str("tracker_reads")
	c.TrackerFullEvery = num("tracker_full_every")
	c.TrackerFullInterval = dur("tracker_full_interval")
	c.BuildBatch = num("build_batch")
	c.PlanEvery = num("plan_every")
	c.Poll = dur("poll")
	c.FleetLease = dur("fleet_lease")
	c.QuotaBackoffMax = dur("quota_backoff_max")
	c.HTTP = str("http")
	c.HTTPToken = str("http_token")
	c.NotifyCmd = str("notify_cmd")
	c.NotifyURL = str("notify_url")
	c.NotifyFormat = str("notify_format")
	c.NotifyEvents = str("notify_events")
	c.NotifyTimeout = dur("notify_timeout")
	switch {
	case c.Agent == "command" && c.AgentCmd == "" && str("agents") == "":
		return &Error{Source: c.sources["agent"], Key: "agent", Msg: "the command backend needs agent_cmd (--agent-cmd '<command line>')"}
	case slices.ContainsFunc(c.Agents, func(a AgentSpec) bool { return a.Backend == "command" }) && c.AgentCmd == "":
		return &Error{Source: c.sources["agents"], Key: "agents", Msg: "the command backend needs agent_cmd (--agent-cmd '<command line>')"}
	case c.MaxStuck < 1:
		return &Error{Source: c.sources["max_stuck"], Key: "max_stuck", Msg: "must be at least 1"}
	case c.IterationTimeout <= 0:
		return &Error{Source: c.sources["iteration_timeout"], Key: "iteration_timeout", Msg: "must be greater than 0"}
	case c.Poll <= 0:
		return &Error{Source: c.sources["poll"], Key: "poll", Msg: "must be greater than 0"}
	case c.TrackerFullInterval < 0:
		return &Error{Source: c.sources["tracker_full_interval"], Key: "tracker_full_interval", Msg: "must be at least 0"}
	case c.BuildBatch < 1:
		return &Error{Source: c.sources["build_batch"], Key: "build_batch", Msg: "must be at least 1"}
	case c.LogRetention < 1:
		return &Error{Source: c.sources["log_retention"], Key: "log_retention", Msg: "must be at least 1"}
	case c.ReportRetention < 1:
		return &Error{Source: c.sources["report_retention"], Key: "report_retention", Msg: "must be at least 1"}
	}
	return nil
}

// AgentSpec is one agent of the agents list.
type AgentSpec struct {
	Name    string // the entry as written: "claude", "codex:gpt-5"
	Backend string // the backend's name, one of agent.Names()
	Model   string // "" for the backend's default
}

// parseAgents reads the agents list: comma-separated entries, each a
// backend's name, or a name and a model after a colon. An empty list is
// the one agent of the agent and model keys.
func parseAgents(v, one, model string) ([]AgentSpec, error) {
	if strings.TrimSpace(v) == "" {
		name := one
		if model != "" {
			name += ":" + model
		}
		return []AgentSpec{{Name: name, Backend: one, Model: model}}, nil
	}
	var out []AgentSpec
	for _, e := range strings.Split(v, ",") {
		e = strings.TrimSpace(e)
		if e == "" {
			continue
		}
		b, m, _ := strings.Cut(e, ":")
		b, m = strings.TrimSpace(b), strings.TrimSpace(m)
		if m == "" {
			e = b
		} else {
			e = b + ":" + m
		}
		if !slices.Contains(agent.Names(), b) {
			return nil, fmt.Errorf("%q is not an agent; use one of: %s, each with an optional :model", b, strings.Join(agent.Names(), ", "))
		}
		if slices.ContainsFunc(out, func(a AgentSpec) bool { return a.Name == e }) {
			return nil, fmt.Errorf("%q is listed twice", e)
		}
		out = append(out, AgentSpec{Name: e, Backend: b, Model: m})
	}
	if len(out) == 0 {
		return nil, errors.New("the list is empty")
	}
	return out, nil
}

// Entry is one line of the effective configuration.
type Entry struct {
	Key    string `json:"key"`
	Value  string `json:"value"`
	Source string `json:"source"`
}

// Entries lists every key with its effective value and source.
func (c *Config) Entries() []Entry {
	var es []Entry
	for _, f := range Fields() {
		v := c.values[f.Key]
		if f.Secret && v != "" {
			v = "(set, not shown)"
		}
		es = append(es, Entry{Key: f.Key, Value: v, Source: c.sources[f.Key]})
	}
	return es
}

// WriteTable prints the effective configuration, one key per line, with
// where each value came from.
func (c *Config) WriteTable(w io.Writer) {
	for _, e := range c.Entries() {
		v := e.Value
		if v == "" {
			v = `""`
		}
		fmt.Fprintf(w, "%-26s %-12s %s\n", e.Key, v, e.Source)
	}
}
