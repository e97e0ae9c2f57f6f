package main

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

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

// seed fills users, tags, shows and show_tags with multi-row INSERTs on a
// few connections at once, foreign-key checks off for the session.
func seed(ctx context.Context, db *sql.DB, nUsers, nShows int) error {
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
		return err
	}
	for _, t := range []string{"show_favorites", "show_grams", "show_tags", "shows", "user_tags", "follows", "tokens", "tags", "users"} {
		if _, err := c.ExecContext(ctx, "TRUNCATE TABLE "+t); err != nil {
			c.Close()
			return err
		}
	}
	c.Close()

	const batch = 1000
	// Secondary indexes are dropped while seeding and rebuilt after in one
	// pass each: maintaining ten of them row by row is what makes a bulk
	// load slow.
	restore, err := dropIndexes(ctx, db, "shows", "show_tags")
	if err != nil {
		return err
	}
	conns := make(chan *sql.Conn, 4)
	for i := 0; i < cap(conns); i++ {
		c, err := conn(ctx)
		if err != nil {
			return err
		}
		defer c.Close()
		conns <- c
	}
	var g *errgroup.Group
	var gctx context.Context
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(cap(conns))
	exec := func(q string) error {
		c := <-conns
		defer func() { conns <- c }()
		_, err := c.ExecContext(gctx, q)
		return err
	}
	ts := func(t time.Time) string { return "'" + t.Format("2006-01-02 15:04:05") + "'" }

	// Users.
	for lo := 1; lo <= nUsers; lo += batch {
		lo := lo
		g.Go(func() error {
			var b strings.Builder
			b.WriteString("INSERT INTO users (id, slug, name, email, password_hash, dj, producer, featured, radio, radio_requested, role, followers_count, created_at, updated_at) VALUES ")
			for id := lo; id < lo+batch && id <= nUsers; id++ {
				if id > lo {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, "(%d,'user-%d','User %d','user%d@example.com','',%d,0,0,%d,0,'',%d,%s,%s)",
					id, id, id, id, id%3&1, boolInt(id%20 == 0), id%500, ts(now), ts(now))
			}
			return exec(b.String())
		})
	}
	if err := g.Wait(); err != nil {
		return err
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
	if _, err := db.ExecContext(ctx, b.String()); err != nil {
		return err
	}

	// Shows: five years back to two months ahead; 3% scheduled, 2%
	// pending, the 100 newest started ones live, the rest complete; 80%
	// of complete non-radio shows archived; 2% featured, 3% radio,
	// 3% private, 0.5% off; one tag on average, skewed to the first tags.
	g, gctx = errgroup.WithContext(ctx)
	g.SetLimit(cap(conns))
	span := int64(5 * 365 * 24 * time.Hour / time.Second)
	for lo := 1; lo <= nShows; lo += batch {
		lo := lo
		g.Go(func() error {
			r := rand.New(rand.NewPCG(uint64(lo), 42))
			var sb, tb, gb strings.Builder
			sb.WriteString("INSERT INTO shows (id, user_id, slug, name, description, start, created_at, updated_at, duration, live, complete, archive, featured, upload, private, radio, off, headline, comments_count, favorites_count, thumbnail_label, video_url, audio_url, image_url, gif_url, stream_key, went_live_at, ended_at, disconnected_at, tag_ids) VALUES ")
			tb.WriteString("INSERT INTO show_tags (show_id, tag_id, start) VALUES ")
			gb.WriteString("INSERT INTO show_grams (gram, show_id) VALUES ")
			nt, ng := 0, 0
			for id := lo; id < lo+batch && id <= nShows; id++ {
				if id > lo {
					sb.WriteByte(',')
				}
				p := r.Float64()
				var start time.Time
				scheduled := p < 0.03
				if scheduled {
					start = now.Add(time.Duration(1+r.Int64N(60*24*3600)) * time.Second)
				} else {
					start = now.Add(-time.Duration(r.Int64N(span)) * time.Second)
				}
				live := !scheduled && id > nShows-100
				if live {
					start = now.Add(-time.Duration(r.IntN(3600)) * time.Second)
				}
				pending := !scheduled && !live && p < 0.05
				complete := !scheduled && !live && !pending
				radio := r.Float64() < 0.03
				archive := complete && !radio && r.Float64() < 0.8
				dur, label, video, ended, went := "NULL", "Starting Soon", "NULL", "NULL", "NULL"
				if live {
					label, went = "Live", ts(start)
					video = fmt.Sprintf("'/media/shows/%d/live.m3u8'", id)
				}
				if complete {
					d := 600 + r.IntN(4*3600)
					dur, label, went, ended = fmt.Sprint(d), "Finished", ts(start), ts(start.Add(time.Duration(d)*time.Second))
					if archive {
						label = fmt.Sprintf("%02d:%02d:%02d", d/3600, d/60%60, d%60)
						video = fmt.Sprintf("'/media/shows/%d/vod.m3u8'", id)
					}
				}
				name := words[r.IntN(len(words))] + " " + words[r.IntN(len(words))] + fmt.Sprintf(" %d", id)
				if r.IntN(100) == 0 {
					name = "Sunrise " + name
				}
				fmt.Fprintf(&sb, "(%d,%d,'show-%d','%s','A show about %s.',%s,%s,%s,%s,%d,%d,%d,%d,0,%d,%d,%d,0,%d,%d,'%s',%s,NULL,NULL,NULL,'sk_%d_%022d',%s,%s,NULL",
					id, 1+r.IntN(nUsers), id, name, name, ts(start), ts(start.Add(-7*24*time.Hour)), ts(now), dur,
					boolInt(live), boolInt(complete), boolInt(archive), boolInt(r.Float64() < 0.02),
					boolInt(r.Float64() < 0.03), boolInt(radio), boolInt(r.Float64() < 0.005),
					r.IntN(200), r.IntN(50), label, video, id, id, went, ended)
				// The name filter's gram index, as the shows service writes it.
				for _, gram := range shows.NameGrams(name) {
					if ng > 0 {
						gb.WriteByte(',')
					}
					ng++
					fmt.Fprintf(&gb, "('%s',%d)", strings.ReplaceAll(gram, "'", "''"), id)
				}
				k := r.IntN(3) // 0, 1 or 2 tags
				seen := map[int]bool{}
				var ids []string // the show's tag_ids
				for j := 0; j < k; j++ {
					u := r.Float64()
					tag := 1 + int(u*u*float64(len(tagNames)))
					if seen[tag] {
						continue
					}
					seen[tag] = true
					ids = append(ids, strconv.Itoa(tag))
					if nt > 0 {
						tb.WriteByte(',')
					}
					nt++
					fmt.Fprintf(&tb, "(%d,%d,%s)", id, tag, ts(start))
				}
				fmt.Fprintf(&sb, ",'%s')", strings.Join(ids, ","))
			}
			if err := exec(sb.String()); err != nil {
				return err
			}
			if ng > 0 {
				if err := exec(gb.String()); err != nil {
					return err
				}
			}
			if nt > 0 {
				return exec(tb.String())
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	return restore()
}

// dropIndexes drops the secondary indexes of the tables (not primary keys
// nor indexes a foreign key needs) and returns the function that adds them
// back, each table in one ALTER.
func dropIndexes(ctx context.Context, db *sql.DB, tables ...string) (func() error, error) {
	type index struct {
		name, cols string
		unique     bool
	}
	found := map[string][]index{}
	for _, table := range tables {
		rows, err := db.QueryContext(ctx, `SELECT INDEX_NAME, NON_UNIQUE, GROUP_CONCAT(CONCAT('`+"`"+`', COLUMN_NAME, '`+"`"+`') ORDER BY SEQ_IN_INDEX)
			FROM information_schema.STATISTICS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND INDEX_NAME <> 'PRIMARY'
			AND INDEX_NAME NOT IN (SELECT CONSTRAINT_NAME FROM information_schema.TABLE_CONSTRAINTS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = ? AND CONSTRAINT_TYPE = 'FOREIGN KEY')
			GROUP BY INDEX_NAME, NON_UNIQUE`, table, table)
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
			if _, err := db.ExecContext(ctx, "ALTER TABLE `"+table+"` "+strings.Join(drops, ", ")); err != nil {
				return nil, fmt.Errorf("drop indexes of %s: %w", table, err)
			}
		}
	}
	return func() error {
		for _, table := range tables {
			var adds []string
			for _, ix := range found[table] {
				kind := "INDEX"
				if ix.unique {
					kind = "UNIQUE INDEX"
				}
				adds = append(adds, fmt.Sprintf("ADD %s `%s` (%s)", kind, ix.name, ix.cols))
			}
			if len(adds) == 0 {
				continue
			}
			start := time.Now()
			if _, err := db.ExecContext(ctx, "ALTER TABLE `"+table+"` "+strings.Join(adds, ", ")); err != nil {
				return fmt.Errorf("add indexes of %s: %w", table, err)
			}
			fmt.Printf("rebuilt %d indexes of %s in %s\n", len(adds), table, time.Since(start).Round(time.Second))
		}
		return nil
	}, nil
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
