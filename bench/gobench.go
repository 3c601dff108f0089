package bench

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// GoBench is one result line of `go test -bench`.
type GoBench struct {
	Name    string             // without the -GOMAXPROCS suffix, e.g. BenchmarkParseReady/issues=10
	N       int64              // iterations
	NsPerOp float64            // ns/op
	Metrics map[string]float64 // every other "value unit" pair: B/op, allocs/op, MB/s, custom
}

// ParseGoBench reads `go test -bench` output and returns its result lines
// in order. Other lines (goos, PASS, ok) are skipped.
func ParseGoBench(r io.Reader) ([]GoBench, error) {
	var out []GoBench
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") || len(f)%2 != 0 {
			continue
		}
		n, err := strconv.ParseInt(f[1], 10, 64)
		if err != nil {
			continue // a benchmark's own log line that starts with its name
		}
		b := GoBench{Name: trimProcs(f[0]), N: n, Metrics: map[string]float64{}}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				return nil, fmt.Errorf("parse %s: value %q: %w", f[0], f[i], err)
			}
			if f[i+1] == "ns/op" {
				b.NsPerOp = v
			} else {
				b.Metrics[f[i+1]] = v
			}
		}
		out = append(out, b)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("read benchmark output: %w", err)
	}
	return out, nil
}

// trimProcs removes the -GOMAXPROCS suffix go test adds to a name.
func trimProcs(name string) string {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

// Find returns the result named name, and whether there was one.
func Find(rs []GoBench, name string) (GoBench, bool) {
	for _, r := range rs {
		if r.Name == name {
			return r, true
		}
	}
	return GoBench{}, false
}
