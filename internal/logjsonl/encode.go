package logjsonl

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/ralphd/ralphd/internal/text"
)

// TimestampLayout is the layout of the "timestamp" of loop_meta records:
// RFC 3339 in UTC with whole seconds, e.g. 2026-01-28T15:30:00Z.
const TimestampLayout = "2006-01-02T15:04:05Z07:00"

// MetaLine returns one complete loop_meta record, newline included:
//
//	{"type":"loop_meta","event":EVENT,"timestamp":TS,"data":DATA}\n
//
// The keys are always in that order and the line is compact. ts is written
// in UTC with whole seconds. data must encode to a JSON object; it may be
//   - nil, written as {};
//   - a [Fields] value, whose keys are written in slice order;
//   - a struct (or pointer to one), whose keys are written in field order,
//     such as [IterationEnd];
//   - a map, whose keys encoding/json sorts;
//   - a json.RawMessage holding an object, compacted.
//
// Values are encoded by encoding/json without HTML escaping.
func MetaLine(event string, ts time.Time, data any) ([]byte, error) {
	if event == "" {
		return nil, errors.New("encode event: empty event name")
	}
	line := make([]byte, 0, 128)
	line = append(line, `{"type":"loop_meta","event":`...)
	line = appendJSONString(line, []byte(event))
	line = append(line, `,"timestamp":"`...)
	line = ts.UTC().AppendFormat(line, TimestampLayout)
	line = append(line, `","data":`...)
	var err error
	line, err = appendData(line, data)
	if err != nil {
		return nil, fmt.Errorf("encode %s event: %w", event, err)
	}
	return append(line, '}', '\n'), nil
}

// appendData appends data encoded as a compact JSON object.
func appendData(dst []byte, data any) ([]byte, error) {
	switch d := data.(type) {
	case nil:
		return append(dst, '{', '}'), nil
	case Fields:
		b, err := d.appendJSON(nil)
		if err != nil {
			return nil, err
		}
		return append(dst, b...), nil
	}
	b, err := marshalCompact(data)
	if err != nil {
		return nil, fmt.Errorf("encode data: %w", err)
	}
	switch {
	case string(b) == "null": // a nil pointer or map: readers expect an object
		return append(dst, '{', '}'), nil
	case len(b) == 0 || b[0] != '{':
		return nil, fmt.Errorf("encode data: %T is not a JSON object", data)
	}
	return append(dst, b...), nil
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string. Control characters, the
// quote and the backslash are escaped; every other valid UTF-8 sequence is
// copied as is (no HTML escaping). Each byte of an invalid UTF-8 sequence is
// written as U+FFFD, as encoding/json does.
func appendJSONString(dst, s []byte) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRune(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i++
			start = i
			continue
		}
		i += size
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// isJSONObject reports whether line is one complete, valid JSON object
// (surrounding whitespace allowed).
func isJSONObject(line []byte) bool {
	for _, c := range line {
		switch c {
		case ' ', '\t', '\r':
			continue
		case '{':
			return text.ValidJSON(line)
		}
		return false
	}
	return false
}
