package live

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"time"
)

// The transcoding ladder's settings (docs/broadcasting.md, "A ladder").
const (
	// SettingTranscode lists the rungs every live video show gets.
	SettingTranscode = "ONAIR_TRANSCODE"
	// SettingTranscodeEncoder is the H.264 encoder of the rungs.
	SettingTranscodeEncoder = "ONAIR_TRANSCODE_ENCODER"
)

// rungSpec is one rung asked for: a height and a video bit rate.
type rungSpec struct {
	height  int
	bitrate int64 // bits per second
}

// defaultRungBitrate is the video bit rate of a rung given without one:
// about what Twitch and YouTube use for H.264 at 30 fps.
func defaultRungBitrate(height int) int64 {
	switch {
	case height >= 1080:
		return 5000_000
	case height >= 720:
		return 2800_000
	case height >= 480:
		return 1400_000
	case height >= 360:
		return 800_000
	case height >= 240:
		return 400_000
	}
	return 250_000
}

// parseTranscode reads ONAIR_TRANSCODE: rungs such as "720p" or
// "360p:800k" separated by commas, 144p to 2160p, each height once; the
// empty text is no ladder. The rungs come highest first.
func parseTranscode(v string) (any, error) {
	var out []rungSpec
	if strings.TrimSpace(v) == "" {
		return out, nil
	}
	for _, item := range strings.Split(v, ",") {
		item = strings.TrimSpace(item)
		h, rate, hasRate := strings.Cut(item, ":")
		num, ok := strings.CutSuffix(h, "p")
		height, err := strconv.Atoi(num)
		if !ok || err != nil || height < 144 || height > 2160 || height%2 != 0 {
			return []rungSpec(nil), fmt.Errorf("rung %q: want a height such as 720p (144p to 2160p, even), optionally with a bit rate such as 720p:2800k", item)
		}
		r := rungSpec{height: height, bitrate: defaultRungBitrate(height)}
		if hasRate {
			if r.bitrate, err = parseBitrate(rate); err != nil {
				return []rungSpec(nil), fmt.Errorf("rung %q: %w", item, err)
			}
		}
		if slices.ContainsFunc(out, func(o rungSpec) bool { return o.height == height }) {
			return []rungSpec(nil), fmt.Errorf("rung %dp is listed twice", height)
		}
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b rungSpec) int { return b.height - a.height })
	return out, nil
}

// parseBitrate reads "800k", "2.5M" or "800000" (bits per second), 64
// kb/s to 50 Mb/s.
func parseBitrate(v string) (int64, error) {
	mult := 1.0
	switch {
	case strings.HasSuffix(v, "k"), strings.HasSuffix(v, "K"):
		mult, v = 1e3, v[:len(v)-1]
	case strings.HasSuffix(v, "M"), strings.HasSuffix(v, "m"):
		mult, v = 1e6, v[:len(v)-1]
	}
	f, err := strconv.ParseFloat(v, 64)
	bps := int64(f * mult)
	if err != nil || bps < 64_000 || bps > 50_000_000 {
		return 0, errors.New("the bit rate must be such as 800k or 2.5M, 64k to 50M")
	}
	return bps, nil
}

// transcodeEncoders are the encoders ONAIR_TRANSCODE_ENCODER accepts.
var transcodeEncoders = []string{"libx264", "h264_nvenc", "h264_vaapi", "h264_qsv"}

func parseTranscodeEncoder(v string) (any, error) {
	if !slices.Contains(transcodeEncoders, v) {
		return "", fmt.Errorf("must be one of %s", strings.Join(transcodeEncoders, ", "))
	}
	return v, nil
}

// ladderConfig is the ladder every live video show gets; nil for none.
type ladderConfig struct {
	rungs   []rungSpec // highest first
	encoder string
	ffmpeg  string
}

// newLadderConfig checks, at start, that ffmpeg is there and has the
// encoder asked for (`ffmpeg -encoders`), so a ladder that cannot run
// stops onair instead of failing each show.
func newLadderConfig(rungs []rungSpec, encoder string) (*ladderConfig, error) {
	if len(rungs) == 0 {
		return nil, nil
	}
	ffmpeg, err := exec.LookPath("ffmpeg")
	if err != nil {
		return nil, fmt.Errorf("live: %s needs ffmpeg on the PATH: %w", SettingTranscode, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, ffmpeg, "-hide_banner", "-encoders").Output()
	if err != nil {
		return nil, fmt.Errorf("live: %s: list ffmpeg's encoders: %w", SettingTranscode, err)
	}
	if !hasEncoder(out, encoder) {
		return nil, fmt.Errorf("live: %s=%s: this ffmpeg (%s) has no such encoder (see ffmpeg -encoders)", SettingTranscodeEncoder, encoder, ffmpeg)
	}
	return &ladderConfig{rungs: rungs, encoder: encoder, ffmpeg: ffmpeg}, nil
}

// hasEncoder finds an encoder's line in `ffmpeg -encoders`
// (" V....D libx264  libx264 H.264 ...").
func hasEncoder(list []byte, name string) bool {
	for line := range bytes.Lines(list) {
		f := bytes.Fields(line)
		if len(f) >= 2 && len(f[0]) == 6 && string(f[1]) == name {
			return true
		}
	}
	return false
}

// rungsBelow are the rungs lower than the source's height: a ladder
// never scales up, and the source itself is the top rung, copied.
func (c *ladderConfig) rungsBelow(height int) []rungSpec {
	var out []rungSpec
	for _, r := range c.rungs {
		if r.height < height {
			out = append(out, r)
		}
	}
	return out
}

// ffmpegArgs is the command line of a show's transcoder: the source as
// FLV on standard input, each rung as FLV on its own pipe (fd 3, 4, ...)
// and the progress reports on the next one. Every rung keeps the
// source's frames (no frame rate conversion), its timestamps (-copyts:
// the FLV's milliseconds, out as they came in) and its keyframes (forced
// where the source has them, and nowhere else), so the rungs are cut at
// the source's segment boundaries; the audio is copied. FLV rather than
// MPEG-TS because reading it back is far cheaper: demuxing the rungs'
// MPEG-TS was a third of a laddered OnAir's CPU. The FLV muxer puts the
// SPS and PPS in the sequence header only (demuxRung gives them back to
// every keyframe), and no onMetaData (nothing reads it).
func (c *ladderConfig) ffmpegArgs(rungs []rungSpec, audio bool) []string {
	args := []string{"-hide_banner", "-nostdin", "-loglevel", "error"}
	hw := ""
	if c.encoder == "h264_vaapi" {
		args = append(args, "-vaapi_device", "/dev/dri/renderD128")
		hw = ",format=nv12,hwupload"
	}
	args = append(args, "-analyzeduration", "500000", "-f", "flv", "-i", "pipe:0", "-copyts")
	var graph strings.Builder
	if len(rungs) > 1 {
		fmt.Fprintf(&graph, "[0:v]split=%d", len(rungs))
		for i := range rungs {
			fmt.Fprintf(&graph, "[s%d]", i)
		}
		graph.WriteString(";")
	}
	for i, r := range rungs {
		in := "[0:v]"
		if len(rungs) > 1 {
			in = fmt.Sprintf("[s%d]", i)
		}
		if i > 0 {
			graph.WriteString(";")
		}
		fmt.Fprintf(&graph, "%sscale=-2:%d,format=yuv420p%s[o%d]", in, r.height, hw, i)
	}
	args = append(args, "-filter_complex", graph.String())
	for i, r := range rungs {
		rate := strconv.FormatInt(r.bitrate, 10)
		args = append(args, "-map", fmt.Sprintf("[o%d]", i))
		if audio {
			args = append(args, "-map", "0:a", "-c:a", "copy")
		}
		args = append(args, "-c:v", c.encoder)
		args = append(args, encoderArgs(c.encoder)...)
		args = append(args, "-b:v", rate, "-maxrate", rate, "-bufsize", strconv.FormatInt(2*r.bitrate, 10),
			"-force_key_frames", "source", "-g", "600", "-fps_mode", "passthrough",
			"-flvflags", "no_metadata", "-f", "flv", fmt.Sprintf("pipe:%d", 3+i))
	}
	return append(args, "-progress", fmt.Sprintf("pipe:%d", 3+len(rungs)), "-stats_period", "0.5")
}

// encoderArgs are the latency-friendly settings of each encoder: no
// lookahead, no B-frames, and keyframes where they are forced (IDR).
func encoderArgs(encoder string) []string {
	switch encoder {
	case "h264_nvenc":
		return []string{"-preset", "p2", "-tune", "ll", "-zerolatency", "1", "-forced-idr", "1"}
	case "h264_qsv":
		return []string{"-preset", "veryfast", "-forced_idr", "1", "-look_ahead", "0", "-async_depth", "1"}
	case "h264_vaapi":
		return []string{"-bf", "0"}
	}
	return []string{"-preset", "veryfast", "-tune", "zerolatency", "-sc_threshold", "0"}
}
