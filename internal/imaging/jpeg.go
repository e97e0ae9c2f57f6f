package imaging

// Frame is what a JPEG's start-of-frame marker says of its coding.
type Frame struct {
	Marker      byte // 0xC0…0xCF, less DHT (C4), JPG (C8) and DAC (CC)
	Progressive bool // SOF2, SOF6, SOF10, SOF14
}

// JPEGFrame walks a JPEG's marker segments up to its start of frame: the
// standard decoder tells the colour model but not whether the image is
// progressive, which holds every coefficient of the image at once (Cost).
// false when data is no JPEG or ends before a frame header.
func JPEGFrame(data []byte) (Frame, bool) {
	if len(data) < 2 || data[0] != 0xFF || data[1] != 0xD8 {
		return Frame{}, false
	}
	for i := 2; i+1 < len(data); {
		if data[i] != 0xFF {
			return Frame{}, false // entropy-coded data before any frame
		}
		m := data[i+1]
		switch {
		case m == 0xFF: // fill byte
			i++
			continue
		case m == 0x01 || m == 0xD8 || (m >= 0xD0 && m <= 0xD7): // no length
			i += 2
			continue
		case m == 0xD9 || m == 0xDA: // end of image, start of scan
			return Frame{}, false
		}
		if i+3 >= len(data) {
			return Frame{}, false
		}
		if m >= 0xC0 && m <= 0xCF && m != 0xC4 && m != 0xC8 && m != 0xCC {
			return Frame{Marker: m, Progressive: (m-0xC0)%4 == 2}, true
		}
		n := int(data[i+2])<<8 | int(data[i+3])
		if n < 2 {
			return Frame{}, false
		}
		i += 2 + n
	}
	return Frame{}, false
}
