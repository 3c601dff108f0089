package atomicfile

import (
	"path/filepath"
	"testing"
)

// BenchmarkWrite compares a state write by path (Write) with one through a
// Dir (Dir.WriteFile), in a subdirectory as attempts/<id>.md is.
func BenchmarkWrite(b *testing.B) {
	data := make([]byte, 4<<10)
	b.Run("path", func(b *testing.B) {
		root := b.TempDir()
		d, err := MakeDirAll(filepath.Join(root, "attempts"), 0o700)
		if err != nil {
			b.Fatal(err)
		}
		d.Close()
		p := filepath.Join(root, "attempts", "t-1.md")
		for b.Loop() {
			if err := Write(p, data, 0o600); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("dir", func(b *testing.B) {
		d, err := OpenDir(b.TempDir())
		if err != nil {
			b.Fatal(err)
		}
		defer d.Close()
		sub, err := d.MakeDir("attempts", 0o700)
		if err != nil {
			b.Fatal(err)
		}
		sub.Close()
		for b.Loop() {
			if err := d.WriteFile("attempts/t-1.md", data, 0o600); err != nil {
				b.Fatal(err)
			}
		}
	})
}
