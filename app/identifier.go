package app

import (
	"unicode"
	"unicode/utf8"
)

// Names people read to tell one thing from another (a show's name, a
// user's name, a tag) must look like what they are. Two kinds of
// characters let a name pass for another: the bidirectional controls
// (U+202A–U+202E embeddings and overrides, U+2066–U+2069 isolates), which
// reorder what follows ("evil\u202Egnp.exe" reads "evilexe.png"), and the
// invisible ones (U+200B zero width space, U+200C zero width non-joiner,
// U+2060 word joiner, U+FEFF zero width no-break space), which make two
// names that look alike different. U+200D (zero width joiner) is the glue
// of emoji sequences (👩‍💻, 🏳️‍🌈), so it is allowed there and only there:
// between two emoji (Unicode's Extended_Pictographic), an emoji modifier,
// U+FE0F or emoji tag characters allowed between the first and the joiner.

// NameProblem says why s cannot be a name ("" when it can): the text rule
// (TextProblem) and then the bidi and invisible characters above.
func NameProblem(s string) string {
	if p := TextProblem(s); p != "" {
		return p
	}
	for i, r := range s {
		switch {
		case r >= 0x202A && r <= 0x202E, r >= 0x2066 && r <= 0x2069:
			return "must not contain bidirectional control characters"
		case r == 0x200B, r == 0x200C, r == 0x2060, r == 0xFEFF:
			return "must not contain invisible characters"
		case r == 0x200D && !joinsEmoji(s, i):
			return "must not contain a zero width joiner outside an emoji sequence"
		}
	}
	return ""
}

// joinsEmoji tells whether the U+200D at byte i of s stands between two
// emoji: Extended_Pictographic after it, and before it one too, with only
// the characters that extend an emoji (U+FE0F, skin tones, tags) between.
func joinsEmoji(s string, i int) bool {
	next, _ := utf8.DecodeRuneInString(s[i+len("\u200D"):])
	if !unicode.Is(extendedPictographic, next) {
		return false
	}
	for j := i; j > 0; {
		r, size := utf8.DecodeLastRuneInString(s[:j])
		j -= size
		switch {
		case r == 0xFE0F, r >= 0x1F3FB && r <= 0x1F3FF, r >= 0xE0020 && r <= 0xE007F:
			continue
		}
		return unicode.Is(extendedPictographic, r)
	}
	return false
}

// extendedPictographic is Unicode's Extended_Pictographic property
// (emoji-data.txt of Unicode 15.0), the "emoji" of UAX #29's rule GB11.
var extendedPictographic = &unicode.RangeTable{
	R16: []unicode.Range16{
		{0x00A9, 0x00A9, 1}, {0x00AE, 0x00AE, 1}, {0x203C, 0x203C, 1}, {0x2049, 0x2049, 1}, {0x2122, 0x2122, 1},
		{0x2139, 0x2139, 1}, {0x2194, 0x2199, 1}, {0x21A9, 0x21AA, 1}, {0x231A, 0x231B, 1}, {0x2328, 0x2328, 1},
		{0x2388, 0x2388, 1}, {0x23CF, 0x23CF, 1}, {0x23E9, 0x23F3, 1}, {0x23F8, 0x23FA, 1}, {0x24C2, 0x24C2, 1},
		{0x25AA, 0x25AB, 1}, {0x25B6, 0x25B6, 1}, {0x25C0, 0x25C0, 1}, {0x25FB, 0x25FE, 1}, {0x2600, 0x2605, 1},
		{0x2607, 0x2612, 1}, {0x2614, 0x2685, 1}, {0x2690, 0x2705, 1}, {0x2708, 0x2712, 1}, {0x2714, 0x2714, 1},
		{0x2716, 0x2716, 1}, {0x271D, 0x271D, 1}, {0x2721, 0x2721, 1}, {0x2728, 0x2728, 1}, {0x2733, 0x2734, 1},
		{0x2744, 0x2744, 1}, {0x2747, 0x2747, 1}, {0x274C, 0x274C, 1}, {0x274E, 0x274E, 1}, {0x2753, 0x2755, 1},
		{0x2757, 0x2757, 1}, {0x2763, 0x2767, 1}, {0x2795, 0x2797, 1}, {0x27A1, 0x27A1, 1}, {0x27B0, 0x27B0, 1},
		{0x27BF, 0x27BF, 1}, {0x2934, 0x2935, 1}, {0x2B05, 0x2B07, 1}, {0x2B1B, 0x2B1C, 1}, {0x2B50, 0x2B50, 1},
		{0x2B55, 0x2B55, 1}, {0x3030, 0x3030, 1}, {0x303D, 0x303D, 1}, {0x3297, 0x3297, 1}, {0x3299, 0x3299, 1},
	},
	R32: []unicode.Range32{
		{0x1F000, 0x1F0FF, 1}, {0x1F10D, 0x1F10F, 1}, {0x1F12F, 0x1F12F, 1}, {0x1F16C, 0x1F171, 1}, {0x1F17E, 0x1F17F, 1},
		{0x1F18E, 0x1F18E, 1}, {0x1F191, 0x1F19A, 1}, {0x1F1AD, 0x1F1E5, 1}, {0x1F201, 0x1F20F, 1}, {0x1F21A, 0x1F21A, 1},
		{0x1F22F, 0x1F22F, 1}, {0x1F232, 0x1F23A, 1}, {0x1F23C, 0x1F23F, 1}, {0x1F249, 0x1F3FA, 1}, {0x1F400, 0x1F53D, 1},
		{0x1F546, 0x1F64F, 1}, {0x1F680, 0x1F6FF, 1}, {0x1F774, 0x1F77F, 1}, {0x1F7D5, 0x1F7FF, 1}, {0x1F80C, 0x1F80F, 1},
		{0x1F848, 0x1F84F, 1}, {0x1F85A, 0x1F85F, 1}, {0x1F888, 0x1F88F, 1}, {0x1F8AE, 0x1F8FF, 1}, {0x1F90C, 0x1F93A, 1},
		{0x1F93C, 0x1F945, 1}, {0x1F947, 0x1FAFF, 1}, {0x1FC00, 0x1FFFD, 1},
	},
	LatinOffset: 2,
}
