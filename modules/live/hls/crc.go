package hls

// crcTable is the table of the CRC-32 used by MPEG-2 PSI sections:
// polynomial 0x04C11DB7, most significant bit first, no reflection. It is
// not the IEEE CRC of hash/crc32, which is reflected.
var crcTable = func() (t [256]uint32) {
	for i := range t {
		c := uint32(i) << 24
		for range 8 {
			if c&0x80000000 != 0 {
				c = c<<1 ^ 0x04C11DB7
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

// crc32MPEG computes the section CRC: initial value all ones, no final XOR.
func crc32MPEG(b []byte) uint32 {
	c := uint32(0xFFFFFFFF)
	for _, x := range b {
		c = c<<8 ^ crcTable[byte(c>>24)^x]
	}
	return c
}
