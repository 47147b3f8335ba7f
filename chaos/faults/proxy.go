// Package faults holds the in-process fault, abuse and load tests of the
// whole bot (bot + research.Runner + the real agent, fetcher and extractor, on
// SQLite or Postgres) against the fake Slack, the fake LLM and fake web
// sites. The tests are in the _test files; this file and figures.go hold
// the pieces they share that are useful elsewhere: a TCP proxy that can cut
// a database connection mid-run, and the figures (RSS, goroutines, Slack
// call rates) the load tests print.
//
//	go test ./chaos/faults/                  # short versions (CI)
//	CHAOS_LONG=1 go test -timeout 30m ./chaos/faults/   # long versions (1,000 runs)
package faults

import (
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
)

// Proxy forwards TCP connections from a 127.0.0.1 listener to a target
// address. Cut closes every open connection and refuses new ones (they are
// accepted and closed at once, as a dead server's host would reset them)
// until Restore. It lets a test take a database away from one process
// without touching the server that other tests share.
type Proxy struct {
	target string
	ln     net.Listener

	mu    sync.Mutex
	cut   bool
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup

	accepted, refused atomic.Int64
}

// NewProxy listens on 127.0.0.1 (a free port) and forwards to target.
func NewProxy(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.acceptLoop()
	return p, nil
}

// Addr is the proxy's listening address, host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Accepted and Refused count client connections forwarded and refused.
func (p *Proxy) Accepted() int64 { return p.accepted.Load() }

// Refused counts connections closed at once because the proxy was cut.
func (p *Proxy) Refused() int64 { return p.refused.Load() }

// Cut drops every open connection and refuses new ones until Restore.
func (p *Proxy) Cut() {
	p.mu.Lock()
	p.cut = true
	conns := p.conns
	p.conns = map[net.Conn]struct{}{}
	p.mu.Unlock()
	for c := range conns {
		c.Close()
	}
}

// Restore forwards new connections again.
func (p *Proxy) Restore() {
	p.mu.Lock()
	p.cut = false
	p.mu.Unlock()
}

// Close stops listening and drops every connection.
func (p *Proxy) Close() error {
	err := p.ln.Close()
	p.Cut()
	p.wg.Wait()
	return err
}

func (p *Proxy) acceptLoop() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			p.serve(c)
		}()
	}
}

// track registers c unless the proxy is cut.
func (p *Proxy) track(cs ...net.Conn) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cut {
		return false
	}
	for _, c := range cs {
		p.conns[c] = struct{}{}
	}
	return true
}

func (p *Proxy) untrack(cs ...net.Conn) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, c := range cs {
		delete(p.conns, c)
	}
}

func (p *Proxy) serve(client net.Conn) {
	if !p.track(client) {
		p.refused.Add(1)
		client.Close()
		return
	}
	server, err := net.Dial("tcp", p.target)
	if err != nil {
		p.untrack(client)
		client.Close()
		return
	}
	if !p.track(server) {
		p.refused.Add(1)
		p.untrack(client)
		client.Close()
		server.Close()
		return
	}
	p.accepted.Add(1)
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		// Closing both ends stops the other direction too.
		dst.Close()
		src.Close()
		done <- struct{}{}
	}
	go pipe(server, client)
	go pipe(client, server)
	<-done
	<-done
	p.untrack(client, server)
}
