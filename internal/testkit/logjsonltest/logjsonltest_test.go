package logjsonltest

import (
	"bytes"
	"encoding/json"
	"io"
	"testing"

	"github.com/matryer/is"
)

func TestStream(t *testing.T) {
	for _, size := range []int64{0, 1, 63, 64, 1000, 1 << 20} {
		is := is.New(t)
		b, err := io.ReadAll(Stream(size))
		is.NoErr(err)
		is.Equal(int64(len(b)), size) // exactly the size asked for
		if size == 0 {
			continue
		}
		is.True(bytes.HasSuffix(b, []byte("\n"))) // whole lines
		again, err := io.ReadAll(Stream(size))
		is.NoErr(err)
		is.True(bytes.Equal(b, again)) // deterministic
		if size < 1<<20 {
			continue
		}
		lines, objects := 0, 0
		for line := range bytes.Lines(b) {
			lines++
			if json.Valid(line) {
				objects++
			}
		}
		is.True(objects*100 >= lines*97) // nearly all stream-json
		is.True(objects < lines)         // with some noise
	}
}

func TestMeasure(t *testing.T) {
	is := is.New(t)
	res, err := Measure(t.TempDir(), 4<<20, 2)
	is.NoErr(err)
	is.Equal(res.Bytes, int64(4<<20))
	is.Equal(res.Rounds, 2)
	is.True(res.LogSize >= res.Bytes) // wrapping only adds bytes
	is.True(res.LogMBps > 0 && res.CopyMBps > 0 && res.Ratio > 0)
	is.True(res.MaxRSS > 0)
}
