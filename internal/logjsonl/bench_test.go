package logjsonl_test

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/ralphd/ralphd/internal/logjsonl"
	"github.com/ralphd/ralphd/internal/testkit/logjsonltest"
)

// benchSize is the input of one benchmark operation.
const benchSize = 32 << 20

// pipeReader hands out at most 64 KiB per Read, as a pipe does, and hides
// bytes.Reader's WriterTo so that io.Copy does not get the whole input in
// one call.
type pipeReader struct{ r *bytes.Reader }

func (p pipeReader) Read(b []byte) (int, error) {
	return p.r.Read(b[:min(len(b), 64<<10)])
}

func benchInput(b *testing.B) []byte {
	b.Helper()
	in, err := io.ReadAll(logjsonltest.Stream(benchSize))
	if err != nil {
		b.Fatal(err)
	}
	return in
}

func benchFile(b *testing.B) *os.File {
	b.Helper()
	f, err := os.OpenFile(filepath.Join(b.TempDir(), "run.log"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC|os.O_APPEND, 0o600)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	return f
}

// BenchmarkCopyLines pipes stream-json-like lines through Writer.CopyLines
// into a file. Compare its MB/s with BenchmarkIOCopyBaseline's.
func BenchmarkCopyLines(b *testing.B) {
	in := benchInput(b)
	f := benchFile(b)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if err := f.Truncate(0); err != nil {
			b.Fatal(err)
		}
		w := logjsonl.New(f, logjsonl.Options{})
		if err := w.CopyLines(logjsonl.StreamStdout, pipeReader{bytes.NewReader(in)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkIOCopyBaseline copies the same input into a file with io.Copy.
func BenchmarkIOCopyBaseline(b *testing.B) {
	in := benchInput(b)
	f := benchFile(b)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if err := f.Truncate(0); err != nil {
			b.Fatal(err)
		}
		if _, err := io.Copy(f, pipeReader{bytes.NewReader(in)}); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkMeta measures one loop_meta record.
func BenchmarkMeta(b *testing.B) {
	cost := 0.0871
	w := logjsonl.New(io.Discard, logjsonl.Options{})
	data := logjsonl.IterationEnd{Iteration: 1, ExitCode: 0, DurationSeconds: 45, Outcome: "ok", Turns: 3, CostUSD: &cost}
	b.ReportAllocs()
	for b.Loop() {
		if err := w.Meta(logjsonl.EventIterationEnd, data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkStreamWriter and BenchmarkWorkerStreamWriter log the same input
// through the stream writer an iteration uses, without and with a worker's
// tag: the ratio of their MB/s is the cost of tagging.
func BenchmarkStreamWriter(b *testing.B) { benchStream(b, "") }

// BenchmarkWorkerStreamWriter: see BenchmarkStreamWriter.
func BenchmarkWorkerStreamWriter(b *testing.B) { benchStream(b, "w2") }

func benchStream(b *testing.B, worker string) {
	in := benchInput(b)
	f := benchFile(b)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if err := f.Truncate(0); err != nil {
			b.Fatal(err)
		}
		sw := logjsonl.New(f, logjsonl.Options{}).WorkerStreamWriter(worker, logjsonl.StreamStdout)
		if _, err := io.Copy(sw, pipeReader{bytes.NewReader(in)}); err != nil {
			b.Fatal(err)
		}
		if err := sw.Close(); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkRender renders a Claude run's log for a person, as `ralphd
// logs` does: a run_start naming the agent, then the synthetic stream.
func BenchmarkRender(b *testing.B) {
	in := append([]byte(`{"type":"loop_meta","event":"run_start","timestamp":"2026-01-28T15:30:00Z","data":{"schema_version":1,"mode":"build","agent":"claude"}}`+"\n"), benchInput(b)...)
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	for b.Loop() {
		if err := logjsonl.Render(io.Discard, bytes.NewReader(in), logjsonl.RenderOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}
