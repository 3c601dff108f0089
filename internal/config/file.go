package config

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/ralphd/ralphd/internal/atomicfile"
	"github.com/ralphd/ralphd/internal/text"
)

// member is one key of a config file's top-level object, with where it
// starts in the file.
type member struct {
	key string
	raw json.RawMessage
	off int // byte offset of the key's opening quote
}

// parseObject reads a config file's top-level JSON object. A syntax error
// is an *Error whose Source is path:line:col, pointing at the offending
// byte (or, when the file ends too early, at its last character). Keys
// given twice are an error naming both places.
func parseObject(path string, data []byte) ([]member, error) {
	at := func(off int, msg string) error {
		line, col := position(data, off)
		return &Error{Source: fmt.Sprintf("%s:%d:%d", path, line, col), Msg: msg}
	}
	syntax := func(err error) error {
		var se *json.SyntaxError
		switch {
		case errors.As(err, &se) && se.Offset > 0 && int(se.Offset) <= len(data) && !strings.Contains(se.Error(), "unexpected end"):
			return at(skipWhite(data, int(se.Offset)-1), "not valid JSON: "+se.Error())
		case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF), se != nil:
			return at(lastNonSpace(data), "not valid JSON: the file ends inside the object (a trailing comma, or a missing } or \")")
		}
		return at(0, "not valid JSON: "+err.Error())
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, &Error{Source: path, Msg: "the file is empty; write {} or remove it"}
		}
		return nil, syntax(err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, at(skipSpace(data, 0), "not a JSON object: the file must hold one {...} of keys")
	}
	var ms []member
	seen := map[string]int{}
	for dec.More() {
		off := skipSpace(data, int(dec.InputOffset()))
		tok, err := dec.Token()
		if err != nil {
			return nil, syntax(err)
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, syntax(err)
		}
		if first, dup := seen[key]; dup {
			l, c := position(data, first)
			return nil, at(off, fmt.Sprintf("%q is given twice (first at %d:%d); keep one", key, l, c))
		}
		seen[key] = off
		ms = append(ms, member{key: key, raw: raw, off: off})
	}
	if _, err := dec.Token(); err != nil { // the closing }
		return nil, syntax(err)
	}
	end := int(dec.InputOffset())
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, at(skipWhite(data, end), "more after the JSON object; a config file holds one object")
	}
	return ms, nil
}

// skipSpace returns the offset of the first byte at or after off that is
// neither JSON whitespace nor a comma.
func skipSpace(data []byte, off int) int {
	for off < len(data) && strings.IndexByte(" \t\r\n,", data[off]) >= 0 {
		off++
	}
	return off
}

// skipWhite returns the offset of the first byte at or after off that is
// not JSON whitespace (or off, when only whitespace follows).
func skipWhite(data []byte, off int) int {
	for i := max(off, 0); i < len(data); i++ {
		if strings.IndexByte(" \t\r\n", data[i]) < 0 {
			return i
		}
	}
	return off
}

// lastNonSpace returns the offset of the file's last non-whitespace byte.
func lastNonSpace(data []byte) int {
	i := len(bytes.TrimRight(data, " \t\r\n")) - 1
	return max(i, 0)
}

// position turns a byte offset into a 1-based line and column (in bytes).
func position(data []byte, off int) (line, col int) {
	off = min(max(off, 0), len(data))
	before := data[:off]
	line = bytes.Count(before, []byte("\n")) + 1
	col = off - bytes.LastIndexByte(before, '\n')
	return line, col
}

// loadFile applies the keys of the config file at path. A missing file is
// no error. Every good key is applied; the errors of the bad ones (unknown
// key, with the closest known one; bad value) are joined, each naming
// path:line:col.
func (c *Config) loadFile(path string) error {
	data, err := readConfig(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	ms, err := parseObject(path, data)
	if err != nil {
		return err
	}
	var errs []error
	for _, m := range ms {
		line, col := position(data, m.off)
		src := fmt.Sprintf("%s:%d:%d", path, line, col)
		f, ok := lookupField(m.key)
		if !ok {
			msg := "unknown key"
			if s := text.Closest(m.key, knownKeys()); s != "" {
				msg += fmt.Sprintf("; did you mean %q?", s)
			} else {
				msg += "; `ralphd config` lists the known keys"
			}
			errs = append(errs, &Error{Source: src, Key: m.key, Msg: msg})
			continue
		}
		v, err := jsonText(f, m.raw)
		if err != nil {
			errs = append(errs, &Error{Source: src, Key: m.key, Msg: err.Error()})
			continue
		}
		if err := c.set(f, v, path); err != nil {
			var ce *Error
			if errors.As(err, &ce) {
				ce.Source = src
			}
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// maxConfigFile bounds a config file: a few hundred bytes in practice.
const maxConfigFile = 1 << 20

// readConfig reads a config file. It follows a symlink (dotfiles often
// are), but what it reads must be a regular file of at most maxConfigFile
// bytes: a directory, a FIFO (which would block forever) or a device is an
// *Error, as is a file that cannot be read.
func readConfig(path string) ([]byte, error) {
	data, err := atomicfile.ReadFollow(path, maxConfigFile)
	switch {
	case err == nil, errors.Is(err, os.ErrNotExist):
		return data, err
	case errors.Is(err, atomicfile.ErrNotRegular):
		fi, _ := os.Stat(path)
		what := "not a regular file"
		if fi != nil {
			what = atomicfile.Describe(fi.Mode())
		}
		return nil, &Error{Source: path, Msg: fmt.Sprintf("is %s, not a JSON file; remove it, or write the configuration there as a file", what)}
	case errors.Is(err, atomicfile.ErrTooLarge):
		return nil, &Error{Source: path, Msg: "is over 1 MiB, far more than any configuration; is it the right file?"}
	}
	return nil, &Error{Source: path, Msg: fmt.Sprintf("cannot be read (%v); fix its permissions or remove it", err)}
}
