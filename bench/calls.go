package bench

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
)

// Call is one recorded run of bd or git: what bdrec appends, one JSON line
// per call, before it executes the real program.
type Call struct {
	Prog   string   `json:"prog"`   // the program's name: "bd" or "git"
	Argv   []string `json:"argv"`   // its arguments, without the program name
	Dir    string   `json:"dir"`    // the working directory it ran in
	Parent string   `json:"parent"` // the parent process's command name (/proc/<ppid>/comm)
	// Guarded is true when the call came through ralphd's bd guard, that is
	// from inside an agent (the guard's environment was set).
	Guarded bool `json:"guarded,omitempty"`
	// Issue is RALPH_ISSUE_ID from the caller's environment.
	Issue string `json:"issue,omitempty"`
	// Nanos is how long the call took, start to exit, when bdrec ran it
	// timed ($BENCH_TIME_CALLS set); 0 otherwise.
	Nanos int64 `json:"ns,omitempty"`
}

// Origin says who made a call: "agent" when it came through ralphd's
// guard or from a process with RALPH_ISSUE_ID set (the agent's
// environment, under ralphd or the bash loop); otherwise the parent's
// command name ("ralphd", "bash", or "bd" for the git calls bd makes
// itself).
func (c Call) Origin() string {
	if c.Guarded || c.Issue != "" {
		return "agent"
	}
	return c.Parent
}

// AppendCall appends c as one JSON line to the file at path, in a single
// write on a file opened with O_APPEND, so that concurrent callers never
// interleave inside a line.
func AppendCall(path string, c Call) error {
	b, err := json.Marshal(c)
	if err != nil {
		return fmt.Errorf("encode call: %w", err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return fmt.Errorf("open call log: %w", err)
	}
	if _, err := f.Write(append(b, '\n')); err != nil {
		f.Close()
		return fmt.Errorf("append call: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("close call log: %w", err)
	}
	return nil
}

// ReadCalls reads a call log written by AppendCall. A missing file is no
// calls.
func ReadCalls(path string) ([]Call, error) {
	f, err := os.Open(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("open call log: %w", err)
	}
	defer f.Close()
	var calls []Call
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for n := 1; sc.Scan(); n++ {
		var c Call
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			return nil, fmt.Errorf("call log line %d: %w", n, err)
		}
		calls = append(calls, c)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read call log: %w", err)
	}
	return calls, nil
}

// Filter returns the calls for which keep is true.
func Filter(calls []Call, keep func(Call) bool) []Call {
	var out []Call
	for _, c := range calls {
		if keep(c) {
			out = append(out, c)
		}
	}
	return out
}
