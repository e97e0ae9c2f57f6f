package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/onair/onair/bench/internal/benchkit"
)

var postClient = &http.Client{
	Timeout:   30 * time.Second,
	Transport: &http.Transport{MaxIdleConnsPerHost: 64, MaxConnsPerHost: 64},
}

// post sends one chat message to the node at base (http://host:port)
// and returns the HTTP status.
func post(ctx context.Context, base, token string, showID int64, text string) (int, error) {
	body, _ := json.Marshal(map[string]string{"message": text})
	req, err := http.NewRequestWithContext(ctx, "POST", fmt.Sprintf("%s/v1/shows/%d/chats", base, showID), bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	req.Header.Set("Authorization", "Bearer "+token)
	req.Header.Set("Content-Type", "application/json")
	resp, err := postClient.Do(req)
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, nil
}

// stored counts the show's chat messages on the server.
func stored(ctx context.Context, srv *benchkit.Server, token string, showID int64) (int, error) {
	var list struct{ Count int }
	err := srv.API(ctx, "GET", fmt.Sprintf("/v1/shows/%d/chats", showID), token, nil, &list)
	return list.Count, err
}

func postOne(ctx context.Context, srv *benchkit.Server, token string, showID int64, text string) error {
	status, err := post(ctx, srv.URL, token, showID, text)
	if err == nil && status != http.StatusCreated {
		err = fmt.Errorf("POST chat: status %d", status)
	}
	return err
}

type posting struct {
	ok, limited, failed int             // 201, 429, anything else (timeouts included)
	latency             []time.Duration // of the 201 POST requests
	node                []int           // the node (index in urls) of each latency
	start               time.Time
	// self is the posting process's CPU and run-queue wait over its life
	// (the posting window); selfOK says it could be read.
	self   usage
	selfOK bool
}

// postJob is what the posting process is given on its stdin, postResult
// what it answers on its stdout.
type postJob struct {
	URLs          []string // the nodes, posted to in turn
	Tokens        []string
	ShowID        int64
	Rate, Seconds int
}

type postResult struct {
	OK, Limited, Failed int
	Latency             []time.Duration
	Node                []int
	Start               time.Time
	CPU, Wait           time.Duration // the posting process's own, read as it ends
	Threads             int
	SchedOK             bool
}

// postChildArg makes the benchmark's binary the posting process.
const postChildArg = "-post-child"

// postApart runs postAll in a process of its own (this binary, run with
// postChildArg): the POSTs and their timing then do not wait behind the
// benchmark's thousands of reading sockets for a core of the same Go
// runtime, as a poster and the audience are different machines in a
// real room. Both processes still share the machine's cores with the
// server. With several nodes the POSTs go to each in turn, as a load
// balancer's round robin sends them.
func postApart(ctx context.Context, urls []string, tokens []string, showID int64, rate, seconds int) (posting, error) {
	exe, err := os.Executable()
	if err != nil {
		return posting{}, err
	}
	job, err := json.Marshal(postJob{URLs: urls, Tokens: tokens, ShowID: showID, Rate: rate, Seconds: seconds})
	if err != nil {
		return posting{}, err
	}
	cmd := exec.CommandContext(ctx, exe, postChildArg)
	cmd.Stdin, cmd.Stderr = bytes.NewReader(job), os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return posting{}, fmt.Errorf("posting process: %w", err)
	}
	var r postResult
	if err := json.Unmarshal(out, &r); err != nil {
		return posting{}, fmt.Errorf("posting process: %w", err)
	}
	return posting{ok: r.OK, limited: r.Limited, failed: r.Failed, latency: r.Latency, node: r.Node, start: r.Start,
		self: usage{cpu: r.CPU, wait: r.Wait, threads: r.Threads}, selfOK: r.SchedOK}, nil
}

// postChild is the posting process: the job from stdin, the result to
// stdout.
func postChild(ctx context.Context) error {
	var job postJob
	if err := json.NewDecoder(os.Stdin).Decode(&job); err != nil {
		return err
	}
	res := postAll(ctx, job.URLs, job.Tokens, job.ShowID, job.Rate, job.Seconds)
	self, ok := selfSched()
	return json.NewEncoder(os.Stdout).Encode(postResult{OK: res.ok, Limited: res.limited, Failed: res.failed, Latency: res.latency, Node: res.node, Start: res.start,
		CPU: self.cpu, Wait: self.wait, Threads: self.threads, SchedOK: ok})
}

// postAll posts rate messages a second for seconds, each from the next
// user in turn, to each of urls in turn, with the send time in the text
// ("bench t=<Unix ns>").
func postAll(ctx context.Context, urls []string, tokens []string, showID int64, rate, seconds int) posting {
	var (
		res posting
		mu  sync.Mutex
		wg  sync.WaitGroup
	)
	total := rate * seconds
	tick := time.NewTicker(time.Second / time.Duration(rate))
	defer tick.Stop()
	res.start = time.Now()
	for i := 0; i < total && ctx.Err() == nil; i++ {
		if i > 0 {
			<-tick.C
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			sent := time.Now()
			node := i % len(urls)
			status, err := post(ctx, urls[node], tokens[i%len(tokens)], showID, fmt.Sprintf("message %d bench t=%d", i, sent.UnixNano()))
			d := time.Since(sent)
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil && status == http.StatusCreated:
				res.ok++
				res.latency = append(res.latency, d)
				res.node = append(res.node, node)
			case err == nil && status == http.StatusTooManyRequests:
				res.limited++
			default:
				res.failed++
			}
		}()
	}
	wg.Wait()
	return res
}
