// Metrics keeps ralphd's Prometheus metrics. It learns almost
// everything from the loop's events (it is an [logjsonl.Sink]); the bd call
// timings and the daemon's state are reported to it directly.
//
// Every name starts with "ralphd_" and follows Prometheus' conventions:
// counters end in _total, units are base units (_seconds, _usd).

package dashboard

import (
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/ralphd/ralphd/internal/logjsonl"
)

// DaemonStates are the values of the ralphd_daemon_state gauge's "state"
// label; exactly one of them is 1 at a time.
var DaemonStates = []string{"starting", "planning", "building", "idle", "paused", "waiting", "stopped"}

// Metrics holds one process's metrics in a registry of its own (no global
// state). It is safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	iterations   *prometheus.CounterVec
	duration     *prometheus.HistogramVec
	closed       prometheus.Counter
	reopened     prometheus.Counter
	stuck        prometheus.Counter
	created      prometheus.Counter
	violations   *prometheus.CounterVec
	cost         *prometheus.CounterVec
	tokens       *prometheus.CounterVec
	quotaWaits   prometheus.Counter
	quotaSeconds prometheus.Counter
	bdCalls      *prometheus.CounterVec
	bdLatency    prometheus.Histogram
	workers      *prometheus.GaugeVec
	daemon       *prometheus.GaugeVec
	runs         *prometheus.CounterVec
	netRefused   *prometheus.CounterVec
	agentIters   *prometheus.CounterVec

	mu      sync.Mutex
	backend string            // the agent of the current run
	agent   map[string]string // worker -> the backend of its running iteration
	runMode string            // the mode of the current run
	mode    map[string]string // worker -> mode of its running iteration
	busy    map[string]bool   // worker -> busy
	nworker int               // workers the process runs
}

// NewMetrics returns Metrics for a process that runs workers workers (at least
// one), with Go runtime and process metrics included.
func NewMetrics(workers int) *Metrics {
	if workers < 1 {
		workers = 1
	}
	m := &Metrics{
		reg:     prometheus.NewRegistry(),
		mode:    map[string]string{},
		agent:   map[string]string{},
		busy:    map[string]bool{},
		nworker: workers,
		iterations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ralphd_iterations_total", Help: "Agent iterations finished, by mode and outcome.",
		}, []string{"mode", "outcome"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "ralphd_iteration_duration_seconds", Help: "Wall-clock duration of agent iterations.",
			Buckets: []float64{1, 10, 30, 60, 120, 300, 600, 1200, 1800, 2700, 3600},
		}, []string{"mode"}),
		closed: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ralphd_issues_closed_total", Help: "Issues closed (and verified) by BUILD iterations.",
		}),
		reopened: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ralphd_issues_reopened_total", Help: "Issues reopened because a check failed after the agent closed them.",
		}),
		stuck: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ralphd_issues_stuck_total", Help: "Issues marked STUCK after using up their attempts.",
		}),
		created: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ralphd_build_created_issues_total", Help: "Issues BUILD iterations created.",
		}),
		violations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ralphd_violations_total", Help: "Forbidden changes found and reverted, by kind.",
		}, []string{"kind"}),
		cost: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ralphd_agent_cost_usd_total", Help: "Agent cost in US dollars as the agent reported it, by backend.",
		}, []string{"backend"}),
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ralphd_agent_tokens_total", Help: "Agent tokens, by backend and kind (input, output, cache_read, cache_write).",
		}, []string{"backend", "kind"}),
		quotaWaits: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ralphd_quota_waits_total", Help: "Waits for the agent's quota to reset.",
		}),
		quotaSeconds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "ralphd_quota_wait_seconds_total", Help: "Time spent waiting for the agent's quota to reset.",
		}),
		bdCalls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ralphd_bd_calls_total", Help: "bd commands ralphd ran itself, by result (ok, error).",
		}, []string{"result"}),
		bdLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "ralphd_bd_call_duration_seconds", Help: "Wall-clock duration of the bd commands ralphd ran itself.",
			Buckets: []float64{.01, .025, .05, .1, .2, .3, .5, 1, 2.5, 5, 10, 30},
		}),
		workers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ralphd_workers", Help: "Workers by state (busy: an agent is running; idle).",
		}, []string{"state"}),
		daemon: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "ralphd_daemon_state", Help: "1 for the daemon's current state, 0 for the others.",
		}, []string{"state"}),
		runs: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ralphd_runs_total", Help: "Runs (or daemon batches) finished, by mode and stop reason.",
		}, []string{"mode", "outcome"}),
		// No host label: the hosts an agent tries are unbounded, and the
		// run log's network_refused events name them.
		agentIters: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ralphd_agent_iterations_total", Help: "Agent iterations finished, by backend and outcome (several backends when the run falls back on another).",
		}, []string{"backend", "outcome"}),
		netRefused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "ralphd_network_refused_total", Help: "Hosts the BUILD sandbox's network proxy refused, once per host per iteration, by backend.",
		}, []string{"backend"}),
	}
	m.reg.MustRegister(m.iterations, m.duration, m.closed, m.reopened, m.stuck, m.created, m.violations,
		m.cost, m.tokens, m.quotaWaits, m.quotaSeconds, m.bdCalls, m.bdLatency, m.workers, m.daemon, m.runs,
		m.netRefused, m.agentIters, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	m.workers.WithLabelValues("busy").Set(0)
	m.workers.WithLabelValues("idle").Set(float64(workers))
	m.SetDaemonState("starting")
	return m
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{Registry: m.reg})
}

// Registry returns the registry, for tests that gather the values.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// SetDaemonState sets the ralphd_daemon_state gauge: state (one of
// [DaemonStates]) to 1 and the others to 0. An unknown state is ignored.
func (m *Metrics) SetDaemonState(state string) {
	known := false
	for _, s := range DaemonStates {
		known = known || s == state
	}
	if !known {
		return
	}
	for _, s := range DaemonStates {
		v := 0.0
		if s == state {
			v = 1
		}
		m.daemon.WithLabelValues(s).Set(v)
	}
}

// BDCall records one bd command ralphd ran, how long it took and whether
// it failed. Its signature fits beads.Client.OnCall.
func (m *Metrics) BDCall(_ []string, d time.Duration, err error) {
	result := "ok"
	if err != nil {
		result = "error"
	}
	m.bdCalls.WithLabelValues(result).Inc()
	m.bdLatency.Observe(d.Seconds())
}

// backendLabel is the agent of the current run, for a label. The caller
// holds m.mu.
func (m *Metrics) backendLabel() string {
	if m.backend == "" {
		return "unknown"
	}
	return m.backend
}

// iterationBackend is the backend of worker's running iteration, for a
// label: the one its iteration_start named, else the run's. The caller
// holds m.mu.
func (m *Metrics) iterationBackend(worker string) string {
	if b := m.agent[worker]; b != "" {
		return b
	}
	return m.backendLabel()
}

// Observe updates the metrics from one loop event.
func (m *Metrics) Observe(ev logjsonl.Event) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch d := ev.Data.(type) {
	case logjsonl.RunStart:
		m.backend, m.runMode = d.Agent, d.Mode
	case logjsonl.IterationStart:
		m.mode[ev.Worker] = d.Mode
		m.agent[ev.Worker] = d.Agent
		m.busy[ev.Worker] = true
		if d.Mode == "plan" {
			m.SetDaemonState("planning")
		} else {
			m.SetDaemonState("building")
		}
	case logjsonl.IterationEnd:
		mode := m.mode[ev.Worker]
		if mode == "" {
			mode = "build"
		}
		outcome := d.Outcome
		if outcome == "" {
			outcome = "unknown"
		}
		m.iterations.WithLabelValues(mode, outcome).Inc()
		m.duration.WithLabelValues(mode).Observe(float64(d.DurationSeconds))
		if d.IssueClosed {
			m.closed.Inc()
		}
		if d.Outcome == "reopened" {
			m.reopened.Inc()
		}
		backend := m.iterationBackend(ev.Worker)
		if d.Agent != "" {
			backend = d.Agent
		}
		m.agentIters.WithLabelValues(backend, outcome).Inc()
		if d.CostUSD != nil && *d.CostUSD > 0 {
			m.cost.WithLabelValues(backend).Add(*d.CostUSD)
		}
		if t := d.Tokens; t != nil {
			for kind, n := range map[string]int64{"input": t.InputTokens, "output": t.OutputTokens, "cache_read": t.CacheReadTokens, "cache_write": t.CacheWriteTokens} {
				if n > 0 {
					m.tokens.WithLabelValues(backend, kind).Add(float64(n))
				}
			}
		}
		delete(m.busy, ev.Worker)
	case logjsonl.Stuck:
		m.stuck.Inc()
	case logjsonl.NetworkRefused:
		m.netRefused.WithLabelValues(m.iterationBackend(ev.Worker)).Inc()
	case logjsonl.Created:
		m.created.Add(float64(d.Count))
	case logjsonl.Violation:
		kind := d.Kind
		if kind == "" {
			kind = "unknown"
		}
		m.violations.WithLabelValues(kind).Inc()
	case logjsonl.QuotaWaitStart:
		m.quotaWaits.Inc()
		m.SetDaemonState("waiting")
	case logjsonl.QuotaWaitEnd:
		m.quotaSeconds.Add(float64(d.WaitedSeconds))
	case logjsonl.Decision:
		switch d.Decision {
		case "idle":
			m.SetDaemonState("idle")
		case "plan":
			m.SetDaemonState("planning")
		case "build":
			m.SetDaemonState("building")
		}
	case logjsonl.RunEnd:
		mode := m.runMode
		if mode == "" {
			mode = "unknown"
		}
		m.runs.WithLabelValues(mode, d.Outcome).Inc()
		if d.Outcome == "budget" {
			m.SetDaemonState("paused") // a daemon holds at its cost cap until a reload
		}
	}
	busy := min(len(m.busy), m.nworker)
	m.workers.WithLabelValues("busy").Set(float64(busy))
	m.workers.WithLabelValues("idle").Set(float64(m.nworker - busy))
}
