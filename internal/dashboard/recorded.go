package dashboard

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"os"
	"time"

	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/state"
)

// tailBytes bounds how much of the newest run log `ralphd serve` reads for
// its "last events": the end of the file, where the newest events are.
const tailBytes = 4 << 20

// recordedEvents returns the last n loop events of the newest run log in
// dir, oldest first, for the "now" panel of `ralphd serve`.
func recordedEvents(dir string, n int) []logjsonl.Event {
	runs, err := logjsonl.ListRuns(dir)
	if err != nil || len(runs) == 0 {
		return nil
	}
	f, err := os.Open(runs[len(runs)-1].Path)
	if err != nil {
		return nil
	}
	defer f.Close()
	if st, err := f.Stat(); err == nil && st.Size() > tailBytes {
		if _, err := f.Seek(st.Size()-tailBytes, io.SeekStart); err != nil {
			return nil
		}
	}
	ring := logjsonl.NewRing(n)
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if ev, ok := parseMeta(sc.Bytes()); ok {
			ring.Observe(ev)
		}
	}
	return ring.Last()
}

// dataTypes maps an event name to the type of its data.
var dataTypes = map[string]func() any{
	logjsonl.EventRunStart:       func() any { return &logjsonl.RunStart{} },
	logjsonl.EventIterationStart: func() any { return &logjsonl.IterationStart{} },
	logjsonl.EventIterationEnd:   func() any { return &logjsonl.IterationEnd{} },
	logjsonl.EventStuck:          func() any { return &logjsonl.Stuck{} },
	logjsonl.EventViolation:      func() any { return &logjsonl.Violation{} },
	logjsonl.EventQuotaWaitStart: func() any { return &logjsonl.QuotaWaitStart{} },
	logjsonl.EventDecision:       func() any { return &logjsonl.Decision{} },
	logjsonl.EventRunEnd:         func() any { return &logjsonl.RunEnd{} },
	logjsonl.EventBDCall:         func() any { return &state.BDCall{} },
}

// parseMeta reads one run-log line as a loop event with typed data. Lines
// that are not loop_meta records (agent output), or that do not parse, are
// skipped.
func parseMeta(line []byte) (logjsonl.Event, bool) {
	if !bytes.Contains(line, []byte(`"loop_meta"`)) {
		return logjsonl.Event{}, false
	}
	var rec struct {
		Type      string          `json:"type"`
		Event     string          `json:"event"`
		Timestamp time.Time       `json:"timestamp"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(line, &rec); err != nil || rec.Type != logjsonl.TypeMeta || rec.Event == "" {
		return logjsonl.Event{}, false
	}
	ev := logjsonl.Event{Name: rec.Event, Time: rec.Timestamp}
	mk, ok := dataTypes[rec.Event]
	if !ok {
		return ev, true
	}
	p := mk()
	if len(rec.Data) > 0 && json.Unmarshal(rec.Data, p) != nil {
		return ev, true
	}
	// The loop hands sinks values, not pointers.
	switch d := p.(type) {
	case *logjsonl.RunStart:
		ev.Data = *d
	case *logjsonl.IterationStart:
		ev.Data = *d
	case *logjsonl.IterationEnd:
		ev.Data = *d
	case *logjsonl.Stuck:
		ev.Data = *d
	case *logjsonl.Violation:
		ev.Data = *d
	case *logjsonl.QuotaWaitStart:
		ev.Data = *d
	case *logjsonl.Decision:
		ev.Data = *d
	case *logjsonl.RunEnd:
		ev.Data = *d
	case *state.BDCall:
		ev.Data = *d
	}
	return ev, true
}
