package logjsonl

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/ralphd/ralphd/internal/text"
)

// WorkerKey is the top-level key that tags an agent's line with its worker
// when several BUILD workers share one run log. Each agent line of a
// worker's iteration gets it as its first key, inserted right after the
// opening brace and nothing else changed:
//
//	agent:  {"type":"assistant","message":{...}}
//	log:    {"ralph_worker":"w2","type":"assistant","message":{...}}
//
// so that `jq 'select(.ralph_worker=="w2")'` picks one worker's lines and
// [SplitWorker] gives back the agent's exact bytes. ralphd's wrapped
// records (agent_output) of a worker carry it the same way; its own
// events carry the worker as data.worker instead. An agent line that has
// a top-level "ralph_worker" key of its own is wrapped, in every run, so
// that no agent can pass its line for another worker's.
const WorkerKey = "ralph_worker"

// workerPrefix is what a tag starts with, right after the brace.
const workerPrefix = `"` + WorkerKey + `":`

// WorkerStreamWriter is [Writer.StreamWriter] for the agent of one of
// several workers: each line it logs is tagged with worker (see
// [WorkerKey]). An empty worker tags nothing, as StreamWriter.
func (w *Writer) WorkerStreamWriter(worker, stream string) io.WriteCloser {
	s := w.newSplitter(stream)
	if worker != "" {
		s.tag = appendJSONString([]byte(workerPrefix), []byte(worker))
	}
	return &streamWriter{s: s}
}

// appendTagged appends the JSON object line with the tag inserted as its
// first key. A comma follows the tag unless the object is empty.
func appendTagged(dst, line, tag []byte) []byte {
	i := bytes.IndexByte(line, '{') // after optional whitespace: line is an object
	dst = append(dst, line[:i+1]...)
	dst = append(dst, tag...)
	if j := text.SkipJSONSpace(line, i+1); j < len(line) && line[j] != '}' {
		dst = append(dst, ',')
	}
	return append(dst, line[i+1:]...)
}

// SplitWorker reads the worker tag of one log line (without its newline):
// the worker, and the line as it was before the tag was inserted, byte for
// byte. A line without a tag comes back unchanged, with worker "". Only a
// tag in the place ralphd puts it (the first key, written compactly) is
// read; a loop_meta event's worker is in its data.
func SplitWorker(line []byte) (worker string, untagged []byte) {
	i := text.SkipJSONSpace(line, 0)
	if i >= len(line) || line[i] != '{' || !bytes.HasPrefix(line[i+1:], []byte(workerPrefix)) {
		return "", line
	}
	start := i + 1 + len(workerPrefix)
	if start >= len(line) || line[start] != '"' {
		return "", line
	}
	end, ok := text.ScanJSONString(line, start+1)
	if !ok || end > len(line) {
		return "", line
	}
	var name string
	if json.Unmarshal(line[start:end], &name) != nil || name == "" {
		return "", line
	}
	rest := end
	if rest < len(line) && line[rest] == ',' {
		rest++
	}
	out := make([]byte, 0, len(line)-(rest-i-1))
	out = append(out, line[:i+1]...)
	return name, append(out, line[rest:]...)
}
