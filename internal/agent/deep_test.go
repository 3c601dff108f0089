package agent

import (
	"bytes"
	"testing"
)

// An agent prints what it likes: a line nested millions deep must not take
// ralphd's stack (a recursive validator's fatal stack overflow cannot be
// recovered), whichever backend reads it. The line reaches the parser as
// the run reads it, up to its line limit.
func TestDeepLinesDoNotOverflowTheStack(t *testing.T) {
	deep := map[string][]byte{
		"arrays":  bytes.Repeat([]byte("["), 8<<20),
		"objects": bytes.Repeat([]byte(`{"a":`), 2<<20),
	}
	for _, name := range Names() {
		b, _ := Describe(name)
		for what, line := range deep {
			t.Run(name+"/"+what, func(t *testing.T) {
				p := b.NewParser()
				_ = p.Line(line)
				_ = p.Finish(0, "")
			})
		}
	}
}
