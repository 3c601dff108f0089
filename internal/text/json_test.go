package text

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// FuzzValidJSON checks ValidJSON against encoding/json.Valid, seeded with every
// recorded agent stream's lines.
func FuzzValidJSON(f *testing.F) {
	files, _ := filepath.Glob(filepath.Join("..", "agent", "testdata", "*.jsonl"))
	more, _ := filepath.Glob(filepath.Join("..", "agent", "testdata", "*", "*.jsonl"))
	if len(files) == 0 {
		f.Fatal("no recorded agent streams")
	}
	for _, path := range append(files, more...) {
		b, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		for line := range bytes.Lines(b) {
			f.Add(line)
		}
	}
	for _, s := range []string{
		``, ` `, `{}`, `[]`, `{"a":[1,-0.5e+3,true,false,null,"\u00e9\n"]}`, `01`, `-`, `1.`, `1e`, `.5`, `"\x"`,
		`{"a" 1}`, `{"a":1,}`, `[1,]`, `[1 2]`, `{,}`, `"` + "\x01" + `"`, "\"\xff\xfe\"", `"\ud800"`, ` {"a":{}} `,
		strings.Repeat("[", MaxJSONDepth) + strings.Repeat("]", MaxJSONDepth),
		strings.Repeat("[", MaxJSONDepth+1) + strings.Repeat("]", MaxJSONDepth+1),
		`{"a":` + strings.Repeat(`{"b":`, MaxJSONDepth-1) + `1` + strings.Repeat("}", MaxJSONDepth),
		`{"a":` + strings.Repeat(`{"b":`, MaxJSONDepth) + `1` + strings.Repeat("}", MaxJSONDepth+1),
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if got, want := ValidJSON(data), json.Valid(data); got != want {
			t.Fatalf("ValidJSON(%.200q) = %v, encoding/json says %v", data, got, want)
		}
	})
}

// TestValidJSONDeep checks that no nesting, however deep, exhausts the stack.
func TestValidJSONDeep(t *testing.T) {
	deep := bytes.Repeat([]byte("["), 64<<20)
	if ValidJSON(deep) {
		t.Fatal("64 MiB of [ is not JSON")
	}
}
