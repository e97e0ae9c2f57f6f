package app

import "unicode/utf8"

// jsonTextProblem tells whether a JSON text holds a string that is not
// Unicode text: raw bytes that are not UTF-8, or a \u escape of a UTF-16
// surrogate that is not half of a pair ("\ud800" alone, "\udc00" first).
// encoding/json turns both into U+FFFD without a word, so a name sent as
// "\ud800" would be stored as "�"; the request is refused instead. Only
// strings are scanned (bytes outside them are the decoder's business).
func jsonTextProblem(b []byte) bool {
	in := false
	for i := 0; i < len(b); {
		c := b[i]
		if !in {
			in = c == '"'
			i++
			continue
		}
		switch {
		case c == '"':
			in = false
			i++
		case c == '\\':
			if i+1 >= len(b) {
				return false // truncated: the decoder refuses it
			}
			if b[i+1] != 'u' {
				i += 2
				continue
			}
			r, ok := hex4(b, i+2)
			if !ok {
				return false // the decoder refuses it
			}
			i += 6
			switch {
			case r >= 0xDC00 && r <= 0xDFFF:
				return true
			case r >= 0xD800 && r <= 0xDBFF:
				if i+1 >= len(b) || b[i] != '\\' || b[i+1] != 'u' {
					return true
				}
				lo, ok := hex4(b, i+2)
				if !ok || lo < 0xDC00 || lo > 0xDFFF {
					return true
				}
				i += 6
			}
		case c < utf8.RuneSelf:
			i++
		default:
			r, size := utf8.DecodeRune(b[i:])
			if r == utf8.RuneError && size == 1 {
				return true
			}
			i += size
		}
	}
	return false
}

// hex4 reads the four hex digits of a \u escape at b[i:].
func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	var r rune
	for _, c := range b[i : i+4] {
		switch {
		case c >= '0' && c <= '9':
			r = r<<4 | rune(c-'0')
		case c >= 'a' && c <= 'f':
			r = r<<4 | rune(c-'a'+10)
		case c >= 'A' && c <= 'F':
			r = r<<4 | rune(c-'A'+10)
		default:
			return 0, false
		}
	}
	return r, true
}
