package state

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
)

// parseObject decodes data, one of ralphd's JSON state files, into a T.
// Anything but a JSON object (null, a number, an array, nothing) is an
// error, never a zero T; what names the file in the error.
func parseObject[T any](what string, data []byte) (T, error) {
	var v T
	trimmed := bytes.TrimSpace(data)
	if !bytes.HasPrefix(trimmed, []byte("{")) {
		return v, errors.New("parse " + what + ": not a JSON object")
	}
	if err := json.Unmarshal(trimmed, &v); err != nil {
		var zero T
		return zero, fmt.Errorf("parse %s: %w", what, err)
	}
	return v, nil
}
