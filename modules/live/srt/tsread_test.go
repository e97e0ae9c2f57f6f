package srt

import (
	"bytes"
	"slices"
	"testing"

	"github.com/bluenviron/mediacommon/v2/pkg/formats/mpegts"

	"github.com/onair/onair/modules/live/streamcore"
)

// bigPictures is a video-only MPEG-TS of n pictures of about 2 KB each
// (every picture spans a dozen transport packets), a keyframe with SPS and
// PPS first; picture i's slice is filled with byte i.
func bigPictures(t testing.TB, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := &mpegts.Writer{W: &buf, Tracks: []*mpegts.Track{{PID: 256, Codec: &mpegts.CodecH264{}}}}
	if err := w.Initialize(); err != nil {
		t.Fatal(err)
	}
	for i := range n {
		slice := append([]byte{0x41, 0x9a}, bytes.Repeat([]byte{byte(i + 1)}, 2000)...)
		au := [][]byte{slice}
		if i == 0 {
			slice[0] = 0x65
			au = [][]byte{testSPS, testPPS, slice}
		}
		if err := w.WriteH264(w.Tracks[0], int64(i)*3000, int64(i)*3000, au); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

// pictures demuxes b and returns the fill byte of each picture emitted,
// and the decode errors counted.
func pictures(t *testing.T, b []byte) ([]byte, uint64) {
	t.Helper()
	var got []byte
	d, err := NewDemuxer(bytes.NewReader(b), func(u streamcore.Unit) error {
		if u.Video && u.AVC == nil {
			slice := u.NALUs[len(u.NALUs)-1]
			for _, c := range slice[2:] {
				if c != slice[2] {
					t.Fatalf("picture %d: damaged slice", slice[2])
				}
			}
			if len(slice) != 2002 {
				t.Fatalf("picture %d: %d bytes", slice[2], len(slice))
			}
			got = append(got, slice[2])
		}
		return nil
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	for d.Read() == nil {
	}
	return got, d.DecodeErrors()
}

// packetsOf lists the offsets of the transport packets of pid in b.
func packetsOf(b []byte, pid uint16) []int {
	var at []int
	for i := 0; i+188 <= len(b); i += 188 {
		if uint16(b[i+1]&0x1f)<<8|uint16(b[i+2]) == pid {
			at = append(at, i)
		}
	}
	return at
}

func TestTSReaderWhole(t *testing.T) {
	got, errs := pictures(t, bigPictures(t, 10))
	// The last PES waits for a next start that never comes.
	if !slices.Equal(got, []byte{1, 2, 3, 4, 5, 6, 7, 8, 9}) || errs != 0 {
		t.Fatalf("pictures %v, %d decode errors", got, errs)
	}
}

// A transport packet lost for good in the middle of a picture drops that
// picture (counted as a decode error), never hands on a torn one.
func TestTSReaderLostPacket(t *testing.T) {
	b := bigPictures(t, 10)
	video := packetsOf(b, 256)
	// The sixth packet of the third picture's (about 12 packets each).
	cut := video[2*len(video)/10+5]
	b = append(b[:cut:cut], b[cut+188:]...)
	got, errs := pictures(t, b)
	if slices.Contains(got, 3) || len(got) != 8 || errs == 0 {
		t.Fatalf("pictures %v, %d decode errors", got, errs)
	}
}

// Garbage between packets (a datagram of something else) is skipped to
// the next sync byte; the pictures around it come through.
func TestTSReaderResync(t *testing.T) {
	b := bigPictures(t, 10)
	video := packetsOf(b, 256)
	at := video[len(video)/2]
	junk := bytes.Repeat([]byte{0x12, 0x34, 0x00}, 50)
	b = append(append(b[:at:at], junk...), b[at:]...)
	got, errs := pictures(t, b)
	if len(got) != 9 || errs != 1 {
		t.Fatalf("pictures %v, %d decode errors", got, errs)
	}
}

func TestSplitAnnexB(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
		ok   bool
	}{
		{"\x00\x00\x00\x01\x09\xf0\x00\x00\x01\x65\x01\x02\x00\x00", []string{"\x09\xf0", "\x65\x01\x02"}, true},
		{"\x00\x00\x01\x41\x00\x00\x00\x01\x41\x02", []string{"\x41", "\x41\x02"}, true},
		{"\x41\x00\x00\x01\x41", nil, false}, // no start code first
		{"\x00\x00\x01\x00\x00\x00", nil, false},
		{"", nil, false},
	} {
		got, ok := splitAnnexB(nil, []byte(c.in))
		var s []string
		for _, n := range got {
			s = append(s, string(n))
		}
		if ok != c.ok || (ok && !slices.Equal(s, c.want)) {
			t.Errorf("%q: %q %v, want %q %v", c.in, s, ok, c.want, c.ok)
		}
	}
}
