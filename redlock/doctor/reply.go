package doctor

import (
	"fmt"
	"strconv"
	"strings"
)

// text returns a reply that is a string (a bulk, simple or verbatim string).
func text(v any) (string, error) {
	if s, ok := v.(string); ok {
		return s, nil
	}
	return "", fmt.Errorf("unexpected reply %v", v)
}

// infoFields reads INFO's text: "field:value" lines under "# Section" headings.
func infoFields(v any) (map[string]string, error) {
	s, err := text(v)
	if err != nil {
		return nil, err
	}
	fields := map[string]string{}
	for line := range strings.SplitSeq(s, "\n") {
		if k, val, ok := strings.Cut(strings.TrimSpace(line), ":"); ok && !strings.HasPrefix(k, "#") {
			fields[k] = val
		}
	}
	return fields, nil
}

// configValue reads CONFIG GET's reply for name: pairs of names and values.
func configValue(v any, name string) (string, error) {
	a, _ := v.([]any)
	for i := 0; i+1 < len(a); i += 2 {
		if k, _ := a[i].(string); strings.EqualFold(k, name) {
			return text(a[i+1])
		}
	}
	return "", fmt.Errorf("CONFIG GET %s: not in the reply %v", name, v)
}

// number reads an integer that a reply gives as an int64 or as its text.
func number(v any) (int64, error) {
	switch v := v.(type) {
	case int64:
		return v, nil
	case string:
		return strconv.ParseInt(v, 10, 64)
	}
	return 0, fmt.Errorf("not a number: %v", v)
}
