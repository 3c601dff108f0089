package atomicfile

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

func TestRead(t *testing.T) {
	tests := []struct {
		name    string
		make    func(t *testing.T, path string)
		want    string
		wantErr error
		inErr   string
	}{
		{"regular", func(t *testing.T, p string) { write(t, p, "abc") }, "abc", nil, ""},
		{"empty", func(t *testing.T, p string) { write(t, p, "") }, "", nil, ""},
		{"at the limit", func(t *testing.T, p string) { write(t, p, strings.Repeat("x", 16)) }, strings.Repeat("x", 16), nil, ""},
		{"over the limit", func(t *testing.T, p string) { write(t, p, strings.Repeat("x", 17)) }, "", ErrTooLarge, "over 16 bytes"},
		{"missing", func(t *testing.T, p string) {}, "", fs.ErrNotExist, ""},
		{"directory", func(t *testing.T, p string) { mkdir(t, p) }, "", ErrNotRegular, "(a directory)"},
		{"FIFO", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "", ErrNotRegular, "(a FIFO)"},
		{"symlink to a file", func(t *testing.T, p string) {
			write(t, p+".target", "abc")
			symlink(t, p+".target", p)
		}, "", ErrNotRegular, "(a symlink)"},
		{"symlink to /dev/zero", func(t *testing.T, p string) { symlink(t, "/dev/zero", p) }, "", ErrNotRegular, "(a symlink)"},
		{"dangling symlink", func(t *testing.T, p string) { symlink(t, "/nonexistent/x", p) }, "", ErrNotRegular, "(a symlink)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "state.json")
			tt.make(t, path)
			done := make(chan struct{})
			var got []byte
			var err error
			var openErr error
			go func() {
				defer close(done)
				got, err = Read(path, 16)
				var f *os.File
				if f, openErr = Open(path); openErr == nil {
					_ = f.Close()
				}
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("Read or Open blocked")
			}
			wantOpen := tt.wantErr // Open refuses what Read refuses, but for the size
			if wantOpen == ErrTooLarge {
				wantOpen = nil
			}
			if (wantOpen == nil) != (openErr == nil) || wantOpen != nil && !errors.Is(openErr, wantOpen) {
				t.Fatalf("Open error = %v; want %v", openErr, tt.wantErr)
			}
			if tt.wantErr == nil {
				if err != nil || string(got) != tt.want {
					t.Fatalf("Read = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Read error = %v; want %v", err, tt.wantErr)
			}
			if !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tt.inErr) {
				t.Fatalf("Read error = %q; want it to name %s and say %q", err, path, tt.inErr)
			}
		})
	}
}

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
}

func mkdir(t *testing.T, path string) {
	t.Helper()
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
}

func symlink(t *testing.T, target, path string) {
	t.Helper()
	if err := os.Symlink(target, path); err != nil {
		t.Fatal(err)
	}
}

// TestReadFollow: ReadFollow follows a symlink to a regular file, and
// refuses the rest as Read does, without blocking on a FIFO.
func TestReadFollow(t *testing.T) {
	tests := []struct {
		name    string
		make    func(t *testing.T, path string)
		want    string
		wantErr error
		inErr   string
	}{
		{"regular", func(t *testing.T, p string) { write(t, p, "abc") }, "abc", nil, ""},
		{"symlink to a file", func(t *testing.T, p string) {
			write(t, p+".target", "abc")
			symlink(t, p+".target", p)
		}, "abc", nil, ""},
		{"symlink to /dev/zero", func(t *testing.T, p string) { symlink(t, "/dev/zero", p) }, "", ErrNotRegular, "(a device)"},
		{"FIFO", func(t *testing.T, p string) {
			if err := syscall.Mkfifo(p, 0o600); err != nil {
				t.Fatal(err)
			}
		}, "", ErrNotRegular, "(a FIFO)"},
		{"directory", func(t *testing.T, p string) { mkdir(t, p) }, "", ErrNotRegular, "(a directory)"},
		{"over the limit", func(t *testing.T, p string) { write(t, p, strings.Repeat("x", 17)) }, "", ErrTooLarge, "over 16 bytes"},
		{"dangling symlink", func(t *testing.T, p string) { symlink(t, "/nonexistent/x", p) }, "", fs.ErrNotExist, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "config.json")
			tt.make(t, path)
			done := make(chan struct{})
			var got []byte
			var err error
			go func() {
				defer close(done)
				got, err = ReadFollow(path, 16)
			}()
			select {
			case <-done:
			case <-time.After(10 * time.Second):
				t.Fatal("ReadFollow blocked")
			}
			if tt.wantErr == nil {
				if err != nil || string(got) != tt.want {
					t.Fatalf("ReadFollow = %q, %v; want %q", got, err, tt.want)
				}
				return
			}
			if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.inErr) {
				t.Fatalf("ReadFollow error = %v; want %v saying %q", err, tt.wantErr, tt.inErr)
			}
		})
	}
}
