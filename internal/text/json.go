// JSON lines are checked the way encoding/json checks them, several times
// faster on the string-heavy lines agents print, and without recursion, so
// that no line, however deeply nested, can exhaust the stack (a recursive
// validator, gjson's among them, can). The run log checks every line it
// writes and shows with ValidJSON, and so do the agents' log parsers
// before they read a line.

package text

import "encoding/binary"

// MaxJSONDepth is the deepest nesting ValidJSON accepts, the same limit as
// encoding/json's.
const MaxJSONDepth = 10000

// ValidJSON reports whether data is one valid JSON value, surrounded by
// optional whitespace. It accepts exactly what encoding/json.ValidJSON accepts
// (bytes that are not UTF-8 are allowed inside strings, nesting is limited
// to MaxJSONDepth) but is several times faster on the string-heavy lines agents
// print, and it does not recurse, so no input can exhaust the stack.
func ValidJSON(data []byte) bool {
	var stackBuf [32]byte
	stack := stackBuf[:0] // the open containers, '{' or '['
	i := 0
	for {
		// A value is expected at i.
		i = SkipJSONSpace(data, i)
		if i >= len(data) {
			return false
		}
		ok := true
		switch c := data[i]; {
		case c == '{' || c == '[':
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			if len(stack) == MaxJSONDepth { // even an empty one, as encoding/json counts
				return false
			}
			i = SkipJSONSpace(data, i+1)
			if i < len(data) && data[i] == closer {
				i++ // empty container: a complete value
				break
			}
			stack = append(stack, c)
			if c == '{' {
				if i, ok = objectKey(data, i); !ok {
					return false
				}
			}
			continue // the first member's value
		case c == '"':
			i, ok = ScanJSONString(data, i+1)
		case c == '-' || (c >= '0' && c <= '9'):
			i, ok = scanNumber(data, i)
		case c == 't':
			i, ok = literal(data, i, "true")
		case c == 'f':
			i, ok = literal(data, i, "false")
		case c == 'n':
			i, ok = literal(data, i, "null")
		default:
			return false
		}
		if !ok {
			return false
		}
		// A value ended at i: close containers until a comma or the end.
		for {
			i = SkipJSONSpace(data, i)
			if len(stack) == 0 {
				return i == len(data)
			}
			if i >= len(data) {
				return false
			}
			top := stack[len(stack)-1]
			c := data[i]
			if c == ',' {
				i++
				if top == '{' {
					i = SkipJSONSpace(data, i)
					if i, ok = objectKey(data, i); !ok {
						return false
					}
				}
				break // the next member's value
			}
			if (top == '{' && c == '}') || (top == '[' && c == ']') {
				stack = stack[:len(stack)-1]
				i++
				continue
			}
			return false
		}
	}
}

// objectKey scans `"key" :` at i and returns the index after the colon.
func objectKey(data []byte, i int) (int, bool) {
	if i >= len(data) || data[i] != '"' {
		return i, false
	}
	i, ok := ScanJSONString(data, i+1)
	if !ok {
		return i, false
	}
	i = SkipJSONSpace(data, i)
	if i >= len(data) || data[i] != ':' {
		return i, false
	}
	return i + 1, true
}

// SkipJSONSpace returns the index of the first byte at or after i that is not
// JSON whitespace.
func SkipJSONSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

func literal(data []byte, i int, word string) (int, bool) {
	if len(data)-i < len(word) || string(data[i:i+len(word)]) != word {
		return i, false
	}
	return i + len(word), true
}

const (
	ones  = 0x0101010101010101
	highs = 0x8080808080808080
)

// plainWord reports whether none of the 8 bytes in w is a quote, a
// backslash or a control character, using the exact "has a zero byte" and
// "has a byte less than n" bit tricks.
func plainWord(w uint64) bool {
	quote := w ^ (ones * '"')
	backslash := w ^ (ones * '\\')
	return ((quote-ones)&^quote|(backslash-ones)&^backslash|(w-ones*0x20)&^w)&highs == 0
}

// ScanJSONString scans the rest of a string whose opening quote is before i
// and returns the index after the closing quote.
func ScanJSONString(data []byte, i int) (int, bool) {
	for {
		for len(data)-i >= 8 && plainWord(binary.LittleEndian.Uint64(data[i:])) {
			i += 8
		}
		if i >= len(data) {
			return i, false
		}
		switch c := data[i]; {
		case c == '"':
			return i + 1, true
		case c < 0x20:
			return i, false
		case c == '\\':
			i++
			if i >= len(data) {
				return i, false
			}
			switch data[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i++
			case 'u':
				if len(data)-i < 5 {
					return i, false
				}
				for _, h := range data[i+1 : i+5] {
					if !isHex(h) {
						return i, false
					}
				}
				i += 5
			default:
				return i, false
			}
		default:
			i++
		}
	}
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// scanNumber scans -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)? at i.
func scanNumber(data []byte, i int) (int, bool) {
	if data[i] == '-' {
		i++
	}
	switch {
	case i >= len(data):
		return i, false
	case data[i] == '0':
		i++
	case data[i] >= '1' && data[i] <= '9':
		i = digits(data, i)
	default:
		return i, false
	}
	if i < len(data) && data[i] == '.' {
		j := digits(data, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(data) && (data[i] == 'e' || data[i] == 'E') {
		i++
		if i < len(data) && (data[i] == '+' || data[i] == '-') {
			i++
		}
		j := digits(data, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func digits(data []byte, i int) int {
	for i < len(data) && data[i] >= '0' && data[i] <= '9' {
		i++
	}
	return i
}
