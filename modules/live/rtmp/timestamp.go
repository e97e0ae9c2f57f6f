package rtmp

// Unwrapper turns RTMP's 32-bit millisecond timestamps, which wrap after
// about 49.7 days and which some encoders start near the top of the range,
// into a continuous int64. Each step is taken as the shortest signed
// distance from the previous timestamp, so wrap-around is crossed
// transparently while small backward steps (audio and video interleaved
// slightly out of order) are preserved rather than misread as a wrap.
//
// The 24-bit limit of the header field (about 4 h 40 min) is invisible
// here: the chunk reader already resolves extended timestamps.
type Unwrapper struct {
	last    uint32
	value   int64
	started bool
}

// Unwrap returns the continuous value of ts.
func (u *Unwrapper) Unwrap(ts uint32) int64 {
	if !u.started {
		u.started = true
		u.last = ts
		u.value = int64(ts)
		return u.value
	}
	u.value += int64(int32(ts - u.last))
	u.last = ts
	return u.value
}
