package live_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/onair/onair/app"
	"github.com/onair/onair/internal/onairtest"
	"github.com/onair/onair/modules/live"
)

// TestLowLatencyPartsStored: the LL-HLS parts a live playlist lists are
// served, each the bytes of its slice of its segment, whether they are in
// memory (the default: no part file on disk, and the live playlist on
// disk is a plain one without LL-HLS tags), evicted from memory (served
// from their segment's file) or on disk (ONAIR_HLS_MEMORY_MB=0: a file
// per part, the live playlist with its parts).
func TestLowLatencyPartsStored(t *testing.T) {
	requireTools(t, "ffmpeg")
	for _, c := range []struct {
		name         string
		memory       int
		tiny, ondisk bool
	}{
		{"memory", 256, false, false},
		{"memory too small for the parts", 256, true, false},
		{"disk", 0, false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			env := onairtest.New(t, onairtest.Options{Configure: func(cfg *app.Config) {
				cfg.Set(live.SettingHLSMemory, c.memory)
			}})
			m, _ := onairtest.Module[*live.Module](env)
			if c.tiny {
				m.SetMediaLimits(1<<20, 30_000) // a few parts; no segment
			}
			_, token := env.CreateUser("Part Store")
			b := onairtest.CreateShow(t, env, token, nil)
			publish(t, b.RTMP+"/"+b.Key, 60, false)
			b.Await(t, "live", isLive)
			base := fmt.Sprintf("%s/media/shows/%d/", env.URL, b.ID)
			awaitSegments(t, base+"index.m3u8", 3)
			_, _, text := getText(t, base+"index.m3u8")

			// The oldest complete segment whose parts are listed.
			parts := map[uint64][]string{}
			for _, p := range partURI.FindAllStringSubmatch(text, -1) {
				seq, _ := strconv.ParseUint(p[2], 10, 64)
				parts[seq] = append(parts[seq], fmt.Sprintf("%s-%s-p%s.ts", p[1], p[2], p[3]))
			}
			var seg string
			var names []string
			for _, s := range lastSegURI.FindAllStringSubmatch(text, -1) {
				seq, _ := strconv.ParseUint(s[2], 10, 64)
				if s[1] == "seg" && len(parts[seq]) > 0 {
					seg, names = s[0], parts[seq]
					break
				}
			}
			if seg == "" {
				t.Fatalf("no complete segment with its parts:\n%s", text)
			}
			evicted := 0
			var joined strings.Builder
			for _, name := range names {
				if !m.InMemory(b.ID, name) {
					evicted++
				}
				status, _, body := getText(t, base+name)
				if status != 200 || len(body) == 0 || body[0] != 0x47 {
					t.Fatalf("%s: %d, %d bytes", name, status, len(body))
				}
				joined.WriteString(body)
			}
			status, _, whole := getText(t, base+seg)
			if status != 200 || joined.String() != whole {
				t.Errorf("%s: %d; its %d parts make %d bytes, the segment %d", seg, status, len(names), joined.Len(), len(whole))
			}
			if c.tiny && evicted == 0 {
				t.Errorf("every part of %s is in memory; none was served from the segment's file", seg)
			}
			if hint := hintURI.FindStringSubmatch(text); hint == nil {
				t.Errorf("no preload hint:\n%s", text)
			} else if status, _, body := getText(t, base+hint[1]); status != 200 || len(body) == 0 || body[0] != 0x47 {
				t.Errorf("hinted part %s: %d, %d bytes", hint[1], status, len(body))
			}

			dir := filepath.Join(env.Core.Config.DataDir, "media", "shows", strconv.FormatInt(b.ID, 10))
			files, _ := filepath.Glob(filepath.Join(dir, "*-p*.ts"))
			disk, err := os.ReadFile(filepath.Join(dir, "index.m3u8"))
			if err != nil {
				t.Fatal(err)
			}
			if listsParts := strings.Contains(string(disk), "#EXT-X-PART:"); listsParts != c.ondisk || (len(files) > 0) != c.ondisk {
				t.Errorf("%d part files on disk, the playlist on disk lists parts: %v; want both only without memory:\n%s", len(files), listsParts, disk)
			}
		})
	}
}
