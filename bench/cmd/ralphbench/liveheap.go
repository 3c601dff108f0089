package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strconv"

	"github.com/ralphd/ralphd/internal/agent"
	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/text"
)

// liveHeap is what the live-heap subcommand found: the live heap (after a
// forced GC) at checkpoints while SIZE bytes of agent output pass through
// agent.Run and the log writer, as in ralphd, in this process.
type liveHeap struct {
	Bytes       int64   `json:"bytes"`
	Checkpoints []int64 `json:"checkpoints"` // bytes read when each sample was taken
	Live        []int64 `json:"live"`        // HeapAlloc after runtime.GC at each checkpoint
	Sys         int64   `json:"sys"`         // memory obtained from the OS at the end
	TotalAlloc  int64   `json:"total_alloc"` // bytes allocated over the run
}

// measureLiveHeap runs the command backend (`jsonlgen SIZE`) with
// agent.Run, its stdout teed into a logjsonl log in dir, exactly as ralphd's
// BUILD iteration wires them, and samples the live heap four times. A
// leak in the agent runner, the stream parser or the log writer shows as a
// live heap that grows from one checkpoint to the next; the garbage
// collector's slack does not, since every sample follows a full GC.
func measureLiveHeap(ctx context.Context, jsonlgen, dir string, size int64) (liveHeap, error) {
	res := liveHeap{Bytes: size}
	f, err := os.OpenFile(filepath.Join(dir, "live-heap.log"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		return res, fmt.Errorf("open log: %w", err)
	}
	defer os.Remove(f.Name())
	defer f.Close()
	w := logjsonl.New(f, logjsonl.Options{})
	so, se := w.StreamWriter(logjsonl.StreamStdout), w.StreamWriter(logjsonl.StreamStderr)
	defer so.Close()
	defer se.Close()

	var read int64
	next := size / 4
	truncated := int64(0)
	opts := agent.RunOptions{
		StdoutRaw: so, StderrRaw: se,
		OnStdout: func(line []byte) {
			read += int64(len(line)) + 1
			if read < next {
				return
			}
			next += size / 4
			// Keep the disk small: the log is O_APPEND.
			if fi, err := f.Stat(); err == nil && fi.Size() > 256<<20 {
				truncated += fi.Size()
				_ = f.Truncate(0)
			}
			runtime.GC()
			var ms runtime.MemStats
			runtime.ReadMemStats(&ms)
			res.Checkpoints = append(res.Checkpoints, read)
			res.Live = append(res.Live, int64(ms.HeapAlloc))
		},
	}
	backend := agent.Command{Line: text.ShellQuote(jsonlgen) + " " + strconv.FormatInt(size, 10)}
	inv := agent.Invocation{Mode: "build", IssueID: "b-1", Iteration: 1, Attempt: 1, Dir: dir, ScratchDir: dir}
	out, err := agent.Run(ctx, backend, inv, opts)
	if err != nil {
		return res, fmt.Errorf("run the agent: %w", err)
	}
	if out.ExitCode != 0 {
		return res, fmt.Errorf("the agent exited %d", out.ExitCode)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	res.Sys = int64(ms.Sys)
	res.TotalAlloc = int64(ms.TotalAlloc)
	return res, nil
}

// cmdLiveHeap is the live-heap subcommand. With a fourth argument it
// writes an allocation profile (pprof) there.
func cmdLiveHeap(args []string) int {
	if len(args) != 3 && len(args) != 4 {
		fmt.Fprintln(os.Stderr, "usage: ralphbench live-heap JSONLGEN DIR SIZE [ALLOC-PROFILE]")
		return 2
	}
	if len(args) == 4 {
		runtime.MemProfileRate = 64 << 10
	}
	size, err := strconv.ParseInt(args[2], 10, 64)
	if err != nil || size <= 0 {
		fmt.Fprintln(os.Stderr, "ralphbench live-heap: SIZE must be a positive number of bytes")
		return 2
	}
	res, err := measureLiveHeap(context.Background(), args[0], args[1], size)
	if err != nil {
		fmt.Fprintf(os.Stderr, "ralphbench live-heap: %v\n", err)
		return 1
	}
	if len(args) == 4 {
		if err := writeAllocProfile(args[3]); err != nil {
			fmt.Fprintf(os.Stderr, "ralphbench live-heap: %v\n", err)
			return 1
		}
	}
	if err := json.NewEncoder(os.Stdout).Encode(res); err != nil {
		return 1
	}
	return 0
}

// writeAllocProfile writes the allocation profile to path.
func writeAllocProfile(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("create alloc profile: %w", err)
	}
	if err := pprof.Lookup("allocs").WriteTo(f, 0); err != nil {
		f.Close()
		return fmt.Errorf("write alloc profile: %w", err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("write alloc profile: %w", err)
	}
	return nil
}
