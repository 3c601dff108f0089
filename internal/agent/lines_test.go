package agent

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/matryer/is"
)

func collectLines(t *testing.T, r io.Reader, maxLine int) ([]string, error) {
	t.Helper()
	var got []string
	err := readLines(r, maxLine, func(l []byte) { got = append(got, string(l)) })
	return got, err
}

func TestReadLines(t *testing.T) {
	long := strings.Repeat("a", 200)
	tests := []struct {
		name    string
		in      string
		maxLine int
		want    []string
	}{
		{"simple", "a\nb\n", 64, []string{"a", "b"}},
		{"no final newline", "a\nb", 64, []string{"a", "b"}},
		{"empty lines kept", "\n\nx\n", 64, []string{"", "", "x"}},
		{"empty input", "", 64, nil},
		{"carriage return kept", "a\r\n", 64, []string{"a\r"}},
		{"exactly max", strings.Repeat("b", 64) + "\n", 64, []string{strings.Repeat("b", 64)}},
		{"max plus one", strings.Repeat("b", 65) + "\n", 64, []string{strings.Repeat("b", 64), "b"}},
		{"chunked then next line", long + "\nnext\n", 64, []string{long[:64], long[:64], long[:64], long[:8], "next"}},
		{"chunked without newline", long, 64, []string{long[:64], long[:64], long[:64], long[:8]}},
		{"twice max", strings.Repeat("c", 128) + "\n", 64, []string{strings.Repeat("c", 64), strings.Repeat("c", 64)}},
		{"tiny bound is raised", "abcdefgh\n", 1, []string{"abcdefgh"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			is := is.New(t)
			got, err := collectLines(t, strings.NewReader(tt.in), tt.maxLine)
			is.NoErr(err)
			is.Equal(got, tt.want)
			// The same through a reader that returns one byte at a time.
			got, err = collectLines(t, iotest.OneByteReader(strings.NewReader(tt.in)), tt.maxLine)
			is.NoErr(err)
			is.Equal(got, tt.want)
		})
	}
}

func TestReadLinesLongerThanBufio(t *testing.T) {
	is := is.New(t)
	// Longer than bufio's 64 KiB buffer, shorter than the bound: one line.
	line := strings.Repeat("x", 200<<10)
	got, err := collectLines(t, strings.NewReader(line+"\nend\n"), 1<<20)
	is.NoErr(err)
	is.Equal(len(got), 2)
	is.Equal(got[0], line)
	is.Equal(got[1], "end")
}

func TestReadLinesError(t *testing.T) {
	is := is.New(t)
	boom := errors.New("boom")
	r := io.MultiReader(strings.NewReader("a\npartial"), iotest.ErrReader(boom))
	got, err := collectLines(t, r, 64)
	is.True(errors.Is(err, boom))
	is.Equal(got, []string{"a", "partial"}) // nothing read is dropped
}

func TestTailBuffer(t *testing.T) {
	is := is.New(t)
	tb := tailBuffer{size: 10}
	tb.add([]byte("first"))
	is.Equal(tb.String(), "first\n")
	for range 100 {
		tb.add([]byte("abc"))
	}
	tb.add([]byte("end"))
	is.Equal(tb.String(), "abc\nabc\nend\n"[2:])
	is.True(cap(tb.buf) <= 64) // bounded
	tb.add([]byte(strings.Repeat("z", 50)))
	is.Equal(tb.String(), strings.Repeat("z", 10))
	empty := tailBuffer{}
	empty.add([]byte("x"))
	is.Equal(empty.String(), "")
}

// FuzzReadLines checks the splitter's contract: no piece longer than the
// bound, no byte lost, no newline delivered.
func FuzzReadLines(f *testing.F) {
	f.Add([]byte("a\nb\n"), 64)
	f.Add([]byte(strings.Repeat("x", 300)+"\n\ny"), 64)
	f.Add([]byte("\n"), 100)
	f.Fuzz(func(t *testing.T, data []byte, maxLine int) {
		if maxLine > 1<<16 || maxLine < 0 {
			maxLine = 1 << 16
		}
		bound := max(maxLine, minMaxLine)
		var total int
		err := readLines(bytes.NewReader(data), maxLine, func(l []byte) {
			if len(l) > bound {
				t.Fatalf("piece of %d bytes over bound %d", len(l), bound)
			}
			if bytes.IndexByte(l, '\n') >= 0 {
				t.Fatalf("newline delivered")
			}
			total += len(l)
		})
		if err != nil {
			t.Fatal(err)
		}
		if want := len(data) - bytes.Count(data, []byte("\n")); total != want {
			t.Fatalf("delivered %d bytes, want %d", total, want)
		}
	})
}
