package main

import (
	"bufio"
	"context"
	"database/sql"
	"fmt"
	"io"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-sql-driver/mysql"
	"golang.org/x/sync/errgroup"

	"github.com/onair/onair/modules/shows"
)

// tagNames of the seed; the first ones are the most used.
var tagNames = []string{"house", "techno", "ambient", "jazz", "drum and bass", "disco", "hip hop", "dub", "soul", "funk",
	"trance", "garage", "electro", "folk", "classical", "reggae", "breaks", "minimal", "deep house", "acid",
	"jungle", "grime", "dubstep", "latin", "afrobeat", "balearic", "italo", "krautrock", "lofi", "idm",
	"rock", "pop", "metal", "punk", "blues", "gospel", "country", "world", "experimental", "talk"}

var words = []string{"Deep", "Night", "Morning", "Session", "Mix", "Radio", "Live", "Sounds", "Groove", "Journey",
	"Selector", "Hour", "Weekly", "Club", "Tape", "Dub", "Heat", "Wave", "Drift", "Signal"}

// seedBlock is how many shows share one random source: a block's shows
// are the same whichever table is being written.
const seedBlock = 1000

// showParts and gramParts are how many LOAD DATA statements fill shows
// and show_grams at once, each a range of the primary key: one statement
// is one server thread, and the machine is shared. A load into a table
// with an AUTO_INCREMENT column holds the table's AUTO-INC lock to its end
// (innodb_autoinc_lock_mode 1, the default), so shows takes one.
const showParts, gramParts = 1, 8

// seedShow is one generated show, before it is written as a row.
type seedShow struct {
	id, user                                  int
	name                                      string
	start                                     time.Time
	live, complete, archive, featured, upload bool
	private, radio, off                       bool
	duration                                  int // seconds; 0: NULL
	comments, favorites                       int
	label                                     string
	video                                     string // "": NULL
	wentLive, ended                           time.Time
	tags                                      []int // in the order the owner gave them
}

// genBlock generates the shows lo..lo+seedBlock-1 (at most nShows): five
// years back to two months ahead; 3% scheduled, 2% pending, the 100
// newest started ones live, the rest complete; 80% of complete non-radio
// shows archived; 2% featured, 3% radio, 3% private, 0.5% off; one tag on
// average, skewed to the first tags. Each block has its own random source,
// so any table's writer regenerates the same shows.
func genBlock(lo, nShows, nUsers int, now time.Time, out []seedShow) []seedShow {
	out = out[:0]
	r := rand.New(rand.NewPCG(uint64(lo), 42))
	span := int64(5 * 365 * 24 * time.Hour / time.Second)
	for id := lo; id < lo+seedBlock && id <= nShows; id++ {
		s := seedShow{id: id}
		p := r.Float64()
		scheduled := p < 0.03
		if scheduled {
			s.start = now.Add(time.Duration(1+r.Int64N(60*24*3600)) * time.Second)
		} else {
			s.start = now.Add(-time.Duration(r.Int64N(span)) * time.Second)
		}
		s.live = !scheduled && id > nShows-100
		if s.live {
			s.start = now.Add(-time.Duration(r.IntN(3600)) * time.Second)
		}
		pending := !scheduled && !s.live && p < 0.05
		s.complete = !scheduled && !s.live && !pending
		s.radio = r.Float64() < 0.03
		s.archive = s.complete && !s.radio && r.Float64() < 0.8
		s.label = "Starting Soon"
		if s.live {
			s.label, s.wentLive = "Live", s.start
			s.video = "/media/shows/" + strconv.Itoa(id) + "/live.m3u8"
		}
		if s.complete {
			d := 600 + r.IntN(4*3600)
			s.duration, s.label, s.wentLive, s.ended = d, "Finished", s.start, s.start.Add(time.Duration(d)*time.Second)
			if s.archive {
				s.label = fmt.Sprintf("%02d:%02d:%02d", d/3600, d/60%60, d%60)
				s.video = "/media/shows/" + strconv.Itoa(id) + "/vod.m3u8"
			}
		}
		s.name = words[r.IntN(len(words))] + " " + words[r.IntN(len(words))] + " " + strconv.Itoa(id)
		if r.IntN(100) == 0 {
			s.name = "Sunrise " + s.name
		}
		s.user = 1 + r.IntN(nUsers)
		s.featured = r.Float64() < 0.02
		s.private = r.Float64() < 0.03
		s.off = r.Float64() < 0.005
		s.comments, s.favorites = r.IntN(200), r.IntN(50)
		k := r.IntN(3) // 0, 1 or 2 tags
		for j := 0; j < k; j++ {
			u := r.Float64()
			tag := 1 + int(u*u*float64(len(tagNames)))
			if !slices.Contains(s.tags, tag) {
				s.tags = append(s.tags, tag)
			}
		}
		out = append(out, s)
	}
	return out
}

// seed fills users, tags, shows, show_tags and show_grams (the name
// filter's trigrams with their copies of each show's name, start and
// visibility, as the shows service writes them) on the tables the
// app's migrations made. The big tables are streamed with LOAD DATA LOCAL
// INFILE in their primary key's order, a few ranges of it at once, their
// secondary indexes dropped first and rebuilt after in one pass each:
// maintaining them row by row is what makes a bulk load slow once the
// indexes outgrow the buffer pool. Shows go in id order, their primary
// key (user_id, id) put back with the indexes (dropIndexes).
//
// It returns the show_counts rows of what it wrote (seedCounts), for
// shows.ReplaceCounts: recounting 10M shows with a join (RebuildCounts) is
// a random read per tagged show at MariaDB's default buffer pool, about as
// long as the whole load.
func seed(ctx context.Context, db *sql.DB, nUsers, nShows int) ([]shows.ShowCount, error) {
	now := time.Now().UTC().Truncate(time.Second)
	conn := func(ctx context.Context) (*sql.Conn, error) {
		c, err := db.Conn(ctx)
		if err != nil {
			return nil, err
		}
		_, err = c.ExecContext(ctx, "SET SESSION foreign_key_checks = 0, unique_checks = 0")
		return c, err
	}
	c, err := conn(ctx)
	if err != nil {
		return nil, err
	}
	for _, t := range []string{"show_favorites", "show_grams", "show_tags", "shows", "user_tags", "follows", "tokens", "tags", "users"} {
		if _, err := c.ExecContext(ctx, "TRUNCATE TABLE "+t); err != nil {
			c.Close()
			return nil, err
		}
	}
	restore, err := dropIndexes(ctx, db, c, "shows", "show_tags", "show_grams")
	c.Close()
	if err != nil {
		return nil, err
	}

	ts := func(b []byte, t time.Time) []byte { return t.AppendFormat(b, "2006-01-02 15:04:05") }
	stamp := ts(nil, now)
	b01 := func(b []byte, v bool) []byte {
		if v {
			return append(b, '1', '\t')
		}
		return append(b, '0', '\t')
	}
	tab := func(b []byte, s string) []byte { return append(append(b, s...), '\t') }
	num := func(b []byte, n int) []byte { return append(strconv.AppendInt(b, int64(n), 10), '\t') }

	type load struct {
		table, cols string
		write       func(w *bufio.Writer) error
	}
	loads := []load{
		{"users", "id, slug, name, email, password_hash, dj, producer, featured, radio, radio_requested, role, followers_count, created_at, updated_at",
			func(w *bufio.Writer) error {
				var b []byte
				for id := 1; id <= nUsers; id++ {
					n := strconv.Itoa(id)
					b = append(b[:0], n...)
					b = append(b, "\tuser-"+n+"\tUser "+n+"\tuser"+n+"@example.com\t\t"...)
					b = num(b, id%3&1)
					b = append(b, "0\t0\t"...)
					b = b01(b, id%20 == 0)
					b = append(b, "0\t\t"...)
					b = num(b, id%500)
					b = append(append(append(append(b, stamp...), '\t'), stamp...), '\n')
					if _, err := w.Write(b); err != nil {
						return err
					}
				}
				return nil
			}},
	}
	for part := range showParts {
		loads = append(loads, load{"shows", "id, user_id, slug, name, description, start, created_at, updated_at, duration, live, complete, archive, featured, upload, private, radio, off, headline, comments_count, favorites_count, thumbnail_label, video_url, audio_url, image_url, gif_url, stream_key, went_live_at, ended_at, disconnected_at, tag_ids",
			func(w *bufio.Writer) error {
				var b []byte
				var blk []seedShow
				blocks := (nShows + seedBlock - 1) / seedBlock
				for lo := 1 + blocks*part/showParts*seedBlock; lo <= nShows && lo < 1+blocks*(part+1)/showParts*seedBlock; lo += seedBlock {
					blk = genBlock(lo, nShows, nUsers, now, blk)
					for i := range blk {
						s := &blk[i]
						b = num(b[:0], s.id)
						b = num(b, s.user)
						b = append(b, "show-"...)
						b = num(b, s.id)
						b = tab(b, s.name)
						b = append(b, "A show about "...)
						b = append(b, s.name...)
						b = append(b, ".\t"...)
						b = append(ts(b, s.start), '\t')
						b = append(ts(b, s.start.Add(-7*24*time.Hour)), '\t')
						b = append(append(b, stamp...), '\t')
						if s.duration > 0 {
							b = num(b, s.duration)
						} else {
							b = append(b, `\N`+"\t"...)
						}
						for _, v := range []bool{s.live, s.complete, s.archive, s.featured, s.upload, s.private, s.radio, s.off, false} {
							b = b01(b, v)
						}
						b = num(b, s.comments)
						b = num(b, s.favorites)
						b = tab(b, s.label)
						if s.video != "" {
							b = tab(b, s.video)
						} else {
							b = append(b, `\N`+"\t"...)
						}
						b = append(b, `\N`+"\t"+`\N`+"\t"+`\N`+"\t"...)
						b = append(b, fmt.Sprintf("sk_%d_%022d\t", s.id, s.id)...)
						for _, t := range []time.Time{s.wentLive, s.ended} {
							if t.IsZero() {
								b = append(b, `\N`+"\t"...)
							} else {
								b = append(ts(b, t), '\t')
							}
						}
						b = append(b, `\N`+"\t"...)
						for j, t := range s.tags {
							if j > 0 {
								b = append(b, ',')
							}
							b = strconv.AppendInt(b, int64(t), 10)
						}
						b = append(b, '\n')
						if _, err := w.Write(b); err != nil {
							return err
						}
					}
				}
				return nil
			}})
	}
	loads = append(loads, load{"show_tags", "show_id, tag_id, start",
		func(w *bufio.Writer) error {
			var b []byte
			var blk []seedShow
			for lo := 1; lo <= nShows; lo += seedBlock {
				blk = genBlock(lo, nShows, nUsers, now, blk)
				for i := range blk {
					s := &blk[i]
					tags := slices.Sorted(slices.Values(s.tags)) // the primary key's order
					for _, t := range tags {
						b = num(b[:0], s.id)
						b = num(b, t)
						b = append(ts(b, s.start), '\n')
						if _, err := w.Write(b); err != nil {
							return err
						}
					}
				}
			}
			return nil
		}})
	// Every gram's shows, in id order, written gram by gram in the
	// primary key's order (the grams are lower-case ASCII, whose byte
	// order is the collation's), in gramParts ranges of about as many
	// rows each.
	// Each row carries its show's name, start and visibility (ShowGram),
	// kept here by show id: names end to end, each ending at nameEnd[id].
	type gramIDs struct {
		grams   []string
		ids     map[string][]uint32
		cut     []int // part p writes grams[cut[p]:cut[p+1]]
		names   []byte
		nameEnd []uint32
		start   []int64 // Unix seconds
		public  []bool
	}
	allGrams := sync.OnceValue(func() gramIDs {
		ids := map[string][]uint32{}
		var blk []seedShow
		total := 0
		names := make([]byte, 0, nShows*24)
		nameEnd := make([]uint32, nShows+1)
		start := make([]int64, nShows+1)
		public := make([]bool, nShows+1)
		for lo := 1; lo <= nShows; lo += seedBlock {
			blk = genBlock(lo, nShows, nUsers, now, blk)
			for i := range blk {
				s := &blk[i]
				names = append(names, s.name...)
				nameEnd[s.id] = uint32(len(names))
				start[s.id] = s.start.Unix()
				public[s.id] = !s.private && !s.off
				for _, g := range shows.NameGrams(blk[i].name) {
					ids[g] = append(ids[g], uint32(blk[i].id))
					total++
				}
			}
		}
		grams := make([]string, 0, len(ids))
		for g := range ids {
			grams = append(grams, g)
		}
		slices.Sort(grams)
		cut := []int{0}
		n := 0
		for i, g := range grams {
			n += len(ids[g])
			if len(cut) < gramParts && n >= total*len(cut)/gramParts {
				cut = append(cut, i+1)
			}
		}
		for len(cut) <= gramParts {
			cut = append(cut, len(grams))
		}
		return gramIDs{grams, ids, cut, names, nameEnd, start, public}
	})
	for part := range gramParts {
		loads = append(loads, load{"show_grams", "gram, show_id, name, start, public",
			func(w *bufio.Writer) error {
				all := allGrams()
				var b []byte
				for _, g := range all.grams[all.cut[part]:all.cut[part+1]] {
					for _, id := range all.ids[g] {
						b = tab(b[:0], g)
						b = num(b, int(id))
						b = append(append(b, all.names[all.nameEnd[id-1]:all.nameEnd[id]]...), '\t')
						b = append(ts(b, time.Unix(all.start[id], 0).UTC()), '\t')
						b = b01(b, all.public[id])
						b[len(b)-1] = '\n'
						if _, err := w.Write(b); err != nil {
							return err
						}
					}
				}
				return nil
			}})
	}
	g, gctx := errgroup.WithContext(ctx)
	var counts []shows.ShowCount
	g.Go(func() error {
		counts = seedCounts(nShows, nUsers, now)
		return nil
	})
	var seq atomic.Int64
	// A table's indexes are added back as soon as its last part is
	// loaded, beside the other tables' loads.
	left := map[string]*atomic.Int32{}
	for _, l := range loads {
		if left[l.table] == nil {
			left[l.table] = new(atomic.Int32)
		}
		left[l.table].Add(1)
	}
	for _, l := range loads {
		g.Go(func() error {
			start := time.Now()
			c, err := conn(gctx)
			if err != nil {
				return err
			}
			defer c.Close()
			// Unique checks on: without them and foreign-key checks, a
			// load into an empty table is MariaDB's bulk insert, which
			// locks the table until it commits, and the table's other
			// parts would wait for it.
			// The server waits at most net_read_timeout for the file's
			// next bytes, and the grams come once every name is read.
			if _, err := c.ExecContext(gctx, "SET SESSION unique_checks = 1, net_read_timeout = 3600"); err != nil {
				return err
			}
			pr, pw := io.Pipe()
			// A failed load elsewhere ends this one too (the driver reads
			// the pipe without watching the context).
			stop := context.AfterFunc(gctx, func() { pr.CloseWithError(context.Cause(gctx)) })
			defer stop()
			name := fmt.Sprintf("onair-seed-%s-%d", l.table, seq.Add(1))
			mysql.RegisterReaderHandler(name, func() io.Reader { return pr })
			defer mysql.DeregisterReaderHandler(name)
			go func() {
				w := bufio.NewWriterSize(pw, 1<<20)
				err := l.write(w)
				if err == nil {
					err = w.Flush()
				}
				pw.CloseWithError(err)
			}()
			res, err := c.ExecContext(gctx, "LOAD DATA LOCAL INFILE 'Reader::"+name+"' INTO TABLE `"+l.table+"` CHARACTER SET utf8mb4 FIELDS TERMINATED BY '\\t' LINES TERMINATED BY '\\n' ("+l.cols+")")
			pr.CloseWithError(io.ErrClosedPipe) // stops the writer if the load failed
			if err != nil {
				return fmt.Errorf("load %s: %w", l.table, err)
			}
			n, _ := res.RowsAffected()
			fmt.Printf("loaded %d rows into %s in %s\n", n, l.table, time.Since(start).Round(time.Second))
			if left[l.table].Add(-1) == 0 {
				return restore(gctx, l.table)
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	var b strings.Builder
	b.WriteString("INSERT INTO tags (id, name, folded, slug) VALUES ")
	for i, t := range tagNames {
		if i > 0 {
			b.WriteByte(',')
		}
		// The names are lower-case ASCII: each is its own key (users.TagKey).
		fmt.Fprintf(&b, "(%d,'%s','%s','%s')", i+1, t, t, strings.ReplaceAll(t, " ", "-"))
	}
	if _, err = db.ExecContext(ctx, b.String()); err != nil {
		return nil, err
	}
	return counts, nil
}

// seedCounts counts the shows genBlock makes as shows.RebuildCounts would
// count them from the tables: by their flags, over every show (tag 0) and
// over each tag's.
func seedCounts(nShows, nUsers int, now time.Time) []shows.ShowCount {
	type key struct {
		tag   int64
		flags [7]bool
	}
	n := map[key]int64{}
	var blk []seedShow
	for lo := 1; lo <= nShows; lo += seedBlock {
		blk = genBlock(lo, nShows, nUsers, now, blk)
		for i := range blk {
			s := &blk[i]
			f := [7]bool{s.live, s.complete, s.archive, s.featured, s.radio, s.private, s.off}
			n[key{0, f}]++
			for _, t := range s.tags {
				n[key{int64(t), f}]++
			}
		}
	}
	rows := make([]shows.ShowCount, 0, len(n))
	for k, c := range n {
		rows = append(rows, shows.ShowCount{TagID: k.tag, Live: k.flags[0], Complete: k.flags[1], Archive: k.flags[2],
			Featured: k.flags[3], Radio: k.flags[4], Private: k.flags[5], Off: k.flags[6], N: c})
	}
	return rows
}

// dropIndexes drops the secondary indexes of the tables (on c, a session
// without foreign-key checks, so that an index a foreign key uses may go
// too) and returns the function that adds a table's back in one ALTER.
//
// A table whose primary key does not start with its AUTO_INCREMENT column
// (shows on MySQL: (user_id, id), migration shows:0043) keeps the unique
// key on that column, which InnoDB requires, and a load in the primary
// key's order would insert into that key at random, a disk read per row
// once it outgrows the buffer pool. So its primary key becomes the
// AUTO_INCREMENT column alone for the load, which then goes in id order,
// and the same ALTER that adds the indexes back puts the primary key back:
// one sorted rebuild of the table.
func dropIndexes(ctx context.Context, db *sql.DB, c *sql.Conn, tables ...string) (func(context.Context, string) error, error) {
	type index struct {
		name, cols string
		unique     bool
	}
	found := map[string][]index{}
	primary := map[string]string{} // a primary key to put back, by table
	for _, table := range tables {
		var pk, auto string
		err := c.QueryRowContext(ctx, `SELECT GROUP_CONCAT(CONCAT('`+"`"+`', COLUMN_NAME, '`+"`"+`') ORDER BY SEQ_IN_INDEX),
			COALESCE((SELECT CONCAT('`+"`"+`', COLUMN_NAME, '`+"`"+`') FROM information_schema.COLUMNS
				WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND EXTRA LIKE '%auto_increment%'), '')
			FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME = 'PRIMARY'`,
			table, table).Scan(&pk, &auto)
		if err != nil {
			return nil, fmt.Errorf("primary key of %s: %w", table, err)
		}
		if auto != "" && !strings.HasPrefix(pk, auto) {
			if _, err := c.ExecContext(ctx, "ALTER TABLE `"+table+"` DROP PRIMARY KEY, ADD PRIMARY KEY ("+auto+")"); err != nil {
				return nil, fmt.Errorf("primary key of %s for the load: %w", table, err)
			}
			primary[table] = pk
		}
		rows, err := c.QueryContext(ctx, `SELECT INDEX_NAME, NON_UNIQUE, GROUP_CONCAT(CONCAT('`+"`"+`', COLUMN_NAME, '`+"`"+`') ORDER BY SEQ_IN_INDEX)
			FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME <> 'PRIMARY'
			GROUP BY INDEX_NAME, NON_UNIQUE`, table)
		if err != nil {
			return nil, err
		}
		for rows.Next() {
			var ix index
			var nonUnique int
			if err := rows.Scan(&ix.name, &nonUnique, &ix.cols); err != nil {
				rows.Close()
				return nil, err
			}
			ix.unique = nonUnique == 0
			found[table] = append(found[table], ix)
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, err
		}
		var drops []string
		for _, ix := range found[table] {
			drops = append(drops, "DROP INDEX `"+ix.name+"`")
		}
		if len(drops) > 0 {
			if _, err := c.ExecContext(ctx, "ALTER TABLE `"+table+"` "+strings.Join(drops, ", ")); err != nil {
				return nil, fmt.Errorf("drop indexes of %s: %w", table, err)
			}
		}
	}
	return func(ctx context.Context, table string) error {
		var adds []string
		for _, ix := range found[table] {
			kind := "INDEX"
			if ix.unique {
				kind = "UNIQUE INDEX"
			}
			adds = append(adds, fmt.Sprintf("ADD %s `%s` (%s)", kind, ix.name, ix.cols))
		}
		if pk := primary[table]; pk != "" {
			adds = append(adds, "DROP PRIMARY KEY", "ADD PRIMARY KEY ("+pk+")")
		}
		if len(adds) == 0 {
			return nil
		}
		start := time.Now()
		if _, err := db.ExecContext(ctx, "ALTER TABLE `"+table+"` "+strings.Join(adds, ", ")); err != nil {
			return fmt.Errorf("add indexes of %s: %w", table, err)
		}
		what := fmt.Sprintf("%d indexes", len(found[table]))
		if primary[table] != "" {
			what += " and the primary key"
		}
		fmt.Printf("rebuilt %s of %s in %s\n", what, table, time.Since(start).Round(time.Second))
		return nil
	}, nil
}
