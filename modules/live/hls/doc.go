// Package hls packages a live H.264/AAC stream into HTTP Live Streaming
// (RFC 8216) files in a directory, in process and without external tools.
//
// A Packager receives FLV audio and video tag bodies, as an RTMP publisher
// sends them, and writes two renditions from the same input:
//
//   - PlaylistAV (index.m3u8): H.264 and AAC in MPEG-TS segments;
//   - PlaylistAudio (audio.m3u8): AAC only, so listeners download no video.
//
// Segments are cut at the first IDR keyframe once SegmentDuration (2 s)
// has accumulated, a keyframe early by timestamp jitter included;
// audio-only output is cut at the last frame within SegmentDuration.
// EXT-X-TARGETDURATION is fixed for the stream: SegmentDuration rounded
// up (TargetDuration may raise it for the A/V rendition), and no segment
// is longer, so it is the longest segment rounded up. A keyframe interval
// longer than the target forces a cut before a non-keyframe, and while
// such a segment is in a playlist the playlist omits
// EXT-X-INDEPENDENT-SEGMENTS. Live playlists keep at least Window of
// media (never under three target durations), or every segment within
// DVR of the edge (Options.DVR; then they offer delta updates, see
// Delta), each segment with
// EXT-X-PROGRAM-DATE-TIME, and are replaced atomically (temporary file
// and rename). Each segment's exact duration, program date time and
// target are recorded in the index; Span measures a recording from it.
//
// Low-latency HLS (RFC 8216bis): each segment is also published while it
// grows, in parts of PartDuration (a third of a second), each a small
// transport stream of its own whose bytes are exactly its slice of the
// segment (PAT and PMT open every part). A part is published as the
// video frame that reaches its end arrives (the last part of a segment
// with the keyframe that ends the segment). The muxer builds each part in a
// reused buffer, written once to the segment file. With Options.Files (a
// server's memory) the part and the live playlists rewritten after each
// part go there only, and the directory gets a live playlist per segment
// without the LL-HLS tags; without Files the part is written, in place,
// to a file of its own and the playlists after every part, and a server
// sends a part of a live stream once its Live says it is published
// (Live.PartPublished). The live playlists carry
// EXT-X-SERVER-CONTROL (CAN-BLOCK-RELOAD, PART-HOLD-BACK), EXT-X-PART-INF,
// the parts of the last three segments and of the one being written,
// EXT-X-PRELOAD-HINT for the next part and EXT-X-RENDITION-REPORT of every
// other rendition (the ladder's rungs too); a Live hears of every playlist published, so that
// blocking playlist reloads and hinted part requests wait on it, and of
// a rung removed, so that they stop waiting for it (ErrGone).
//
// Master playlists (MasterAV, MasterAudio; ArchiveMasterAV,
// ArchiveMasterAudio from Finalize) list the renditions with CODECS,
// BANDWIDTH, AVERAGE-BANDWIDTH, RESOLUTION and FRAME-RATE, measured from
// the segments (recorded in the index with their size and codecs). The
// live masters are rewritten when a player's choice could change (codecs,
// resolution, frame rate, a higher peak), and when the average drifts by
// more than a tenth; the archive's carry the exact figures.
//
// A track whose sequence header arrives after packaging began without it
// (late video from some encoders) joins the A/V rendition after an
// EXT-X-DISCONTINUITY, with the numbering continued: a transport stream
// cannot add a track mid-segment, and players reset their decoders there.
//
// Every finished segment is written to disk and appended to IndexFile
// before it appears in a playlist, so a restart of the process loses no
// finished segment. Nothing is synced while live (nginx-rtmp syncs
// nothing either): after a power loss the last half minute or so may be
// missing, and Finalize leaves out what did not reach the disk whole
// (ReadRecorded), then syncs the archive once. Opening a Packager on a
// directory with segments continues their numbering after
// EXT-X-DISCONTINUITY (a publisher that reconnected).
// Finalize writes the VOD playlists of every segment (ArchiveAV,
// ArchiveAudio) from the index and ends the live playlists.
//
// The transport stream muxer is hand-written: PAT and PMT (with their
// CRC-32) open every segment, H.264 is carried as Annex-B access units with
// an access unit delimiter and with SPS and PPS before every IDR, AAC as
// ADTS frames, PCR rides on the video track (on audio when there is no
// video), and continuity counters run across segments.
package hls
