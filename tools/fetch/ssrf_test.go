package fetch

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"strings"
	"sync/atomic"
	"testing"
)

// TestSSRF runs every URL through a Fetcher whose socket dial is replaced by
// one that records the chosen IP and connects to a local test server. A case
// that should be refused must fail with wantErr and must not have dialled
// anything; a case that should pass must dial exactly the public IP.
func TestSSRF(t *testing.T) {
	srv := textServer(t, "text/plain", "ok")
	res := newFakeResolver().
		set("public.test", "93.184.216.34").
		set("public6.test", "2606:2800:220:1:248:1893:25c8:1946").
		set("loop.test", "127.0.0.1").
		set("private.test", "10.0.0.5").
		set("meta.test", "169.254.169.254").
		set("mixed.test", "93.184.216.34 10.1.1.1").
		set("loop6.test", "::1").
		set("mapped.test", "::ffff:169.254.169.254").
		set("ula.test", "fd00:ec2::254").
		set("cgnat.test", "100.64.0.1").
		set("zero.test", "0.0.0.0").
		set("nat64priv.test", "64:ff9b::a00:1").
		set("localhost", "127.0.0.1").
		set("metadata.google.internal", "169.254.169.254")

	blocked := []string{
		// IPv4 literals
		"http://127.0.0.1/", "http://127.1.2.3:8080/", "http://10.0.0.1/", "http://172.16.0.1/",
		"http://172.31.255.255/", "http://192.168.1.1/", "http://169.254.169.254/latest/meta-data/",
		"http://169.254.1.1/", "http://100.64.0.1/", "http://100.100.100.200/", "http://0.0.0.0/",
		"http://0.1.2.3/", "http://255.255.255.255/", "http://240.0.0.1/", "http://224.0.0.1/",
		"http://239.255.255.250/", "http://192.0.2.1/", "http://198.51.100.7/", "http://203.0.113.9/",
		"http://198.18.0.1/", "http://192.0.0.192/", "http://192.88.99.1/",
		// IPv6 literals and IPv4 embedded in IPv6
		"http://[::1]/", "http://[::]/", "http://[::ffff:127.0.0.1]/", "http://[::ffff:7f00:1]/",
		"http://[::ffff:10.0.0.1]/", "http://[::ffff:169.254.169.254]/", "http://[::127.0.0.1]/",
		"http://[fe80::1]/", "http://[fc00::1]/", "http://[fd00:ec2::254]/", "http://[ff02::1]/",
		"http://[2001:db8::1]/", "http://[64:ff9b::7f00:1]/", "http://[64:ff9b::a9fe:a9fe]/",
		"http://[2002:7f00:1::1]/", "http://[2002:a00:1::1]/", "http://[2001::1]/", "http://[fec0::1]/",
		"http://[100::1]/", "http://[3fff::1]/", "http://[64:ff9b:1::1]/", "http://[::ffff:0.0.0.0]/",
		// IDNA maps full-width digits and dots to 127.0.0.1
		"http://１２７.０.０.１/", "http://１２７。０。０。１/",
		// names
		"http://localhost/", "http://LOCALHOST./", "http://foo.localhost/", "http://metadata.google.internal/computeMetadata/v1/",
		"http://metadata/", "http://loop.test/", "http://private.test/", "http://meta.test/", "http://mixed.test/",
		"http://loop6.test/", "http://mapped.test/", "http://ula.test/", "http://cgnat.test/", "http://zero.test/",
		"http://nat64priv.test/",
	}
	type tc struct {
		url     string
		wantErr error
		wantIP  string
	}
	var cases []tc
	for _, u := range blocked {
		cases = append(cases, tc{url: u, wantErr: ErrBlockedAddress})
	}
	cases = append(cases,
		tc{url: "http://2130706433/", wantErr: ErrInvalidURL},
		tc{url: "http://0177.0.0.1/", wantErr: ErrInvalidURL},
		tc{url: "http://0x7f.1/", wantErr: ErrInvalidURL},
		tc{url: "http://0x7f000001/", wantErr: ErrInvalidURL},
		tc{url: "http://127.1/", wantErr: ErrInvalidURL},
		tc{url: "http://017700000001/", wantErr: ErrInvalidURL},
		tc{url: "http://127.0.0.1./", wantErr: ErrInvalidURL},
		tc{url: "http://%31%32%37.0.0.1/", wantErr: ErrInvalidURL},
		tc{url: "http://１２７.１/", wantErr: ErrInvalidURL},
		tc{url: "http://[fe80::1%25eth0]/", wantErr: ErrInvalidURL},
		tc{url: "file:///etc/passwd", wantErr: ErrScheme},
		tc{url: "gopher://127.0.0.1:6379/_INFO", wantErr: ErrScheme},
		tc{url: "ftp://example.com/", wantErr: ErrScheme},
		tc{url: "data:text/html,<script>", wantErr: ErrScheme},
		tc{url: "javascript:alert(1)", wantErr: ErrScheme},
		tc{url: "dict://127.0.0.1:11211/", wantErr: ErrScheme},
		tc{url: "http://user:pass@public.test/", wantErr: ErrUserinfo},
		tc{url: "http://@public.test/", wantErr: ErrUserinfo},
		tc{url: "http:///etc/passwd", wantErr: ErrInvalidURL},
		tc{url: "http://public.test:25/", wantErr: ErrPort},
		tc{url: "http://public.test:6667/", wantErr: ErrPort},
		// allowed: public addresses are dialled at the checked IP
		tc{url: "http://public.test/", wantIP: "93.184.216.34:80"},
		tc{url: "http://public.test:8443/x?y=1", wantIP: "93.184.216.34:8443"},
		tc{url: "http://public6.test/", wantIP: "[2606:2800:220:1:248:1893:25c8:1946]:80"},
		tc{url: "http://93.184.216.34/", wantIP: "93.184.216.34:80"},
		tc{url: "http://[64:ff9b::5db8:d822]/", wantIP: "[64:ff9b::5db8:d822]:80"},
		tc{url: "http://[::ffff:93.184.216.34]/", wantIP: "93.184.216.34:80"},
		tc{url: "HTTP://PUBLIC.TEST/#frag", wantIP: "93.184.216.34:80"},
	)
	if len(cases) < 50 {
		t.Fatalf("only %d cases", len(cases))
	}
	for _, c := range cases {
		t.Run(c.url, func(t *testing.T) {
			d := &redirectingDial{target: hostPort(t, srv)}
			f := newTestFetcher(t, Options{Resolver: res}, d.dial)
			got, err := f.Fetch(context.Background(), c.url)
			if c.wantErr != nil {
				if !errors.Is(err, c.wantErr) {
					t.Fatalf("err = %v, want %v", err, c.wantErr)
				}
				if a := d.addrs(); len(a) != 0 {
					t.Fatalf("dialled %v for a refused URL", a)
				}
				return
			}
			if err != nil {
				t.Fatalf("Fetch: %v", err)
			}
			if got.Text != "ok" {
				t.Fatalf("text = %q", got.Text)
			}
			for _, a := range d.addrs() {
				if a != c.wantIP {
					t.Fatalf("dialled %s, want %s", a, c.wantIP)
				}
			}
		})
	}
}

// TestDNSRebinding: the name answers a public address first and 127.0.0.1
// afterwards. The dialer resolves once per connection and dials what it
// checked, so the second connection is refused and 127.0.0.1 is never dialled.
func TestDNSRebinding(t *testing.T) {
	srv := textServer(t, "text/plain", "ok")
	for _, order := range [][]string{
		{"93.184.216.34", "127.0.0.1"},
		{"127.0.0.1", "93.184.216.34"},
		{"93.184.216.34", "::ffff:127.0.0.1"},
	} {
		t.Run(strings.Join(order, "_then_"), func(t *testing.T) {
			res := newFakeResolver().set("rebind.test", order...)
			d := &redirectingDial{target: hostPort(t, srv)}
			f := newTestFetcher(t, Options{Resolver: res, IgnoreRobots: true}, d.dial)
			for i := 0; i < 2; i++ {
				f.Close() // force a new connection, hence a new lookup
				_, err := f.Fetch(context.Background(), "http://rebind.test/")
				public := IsPublicAddr(netip.MustParseAddr(order[i]))
				if public && err != nil {
					t.Fatalf("fetch %d (%s): %v", i, order[i], err)
				}
				if !public && !errors.Is(err, ErrBlockedAddress) {
					t.Fatalf("fetch %d (%s): err = %v, want ErrBlockedAddress", i, order[i], err)
				}
			}
			for _, a := range d.addrs() {
				if a != "93.184.216.34:80" {
					t.Fatalf("dialled %s", a)
				}
			}
			if n := res.count("rebind.test"); n != 2 {
				t.Fatalf("%d lookups, want one per connection (2)", n)
			}
		})
	}
}

// TestDialControl checks the second line of defence: even when asked to dial
// an IP directly, the socket Control hook refuses a blocked address.
func TestDialControl(t *testing.T) {
	srv := textServer(t, "text/plain", "ok")
	f := newTestFetcher(t, Options{}, nil)
	_, err := f.dialer.dial(context.Background(), "tcp", hostPort(t, srv), false)
	if !errors.Is(err, ErrBlockedAddress) {
		t.Fatalf("raw dial to %s: err = %v, want ErrBlockedAddress", hostPort(t, srv), err)
	}
	c, err := f.dialer.dial(context.Background(), "tcp", hostPort(t, srv), true)
	if err != nil {
		t.Fatalf("dial with allowed host: %v", err)
	}
	c.Close()
}

// TestRedirectToPrivate: an allow-listed server (127.0.0.1:portA only)
// redirects to other private targets; every hop is re-checked.
func TestRedirectToPrivate(t *testing.T) {
	var bHits atomic.Int32
	b := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		bHits.Add(1)
		w.Header().Set("Content-Type", "text/plain")
		w.Write([]byte("secret"))
	}))
	defer b.Close()
	bPort := portOfServer(t, b)
	targets := map[string]error{
		"/b-ip":       nil, // filled below: 127.0.0.1:bPort, not allow-listed
		"/b-v6":       ErrBlockedAddress,
		"/b-mapped":   ErrBlockedAddress,
		"/b-local":    ErrBlockedAddress,
		"/metadata":   ErrBlockedAddress,
		"/metaname":   ErrBlockedAddress,
		"/file":       ErrScheme,
		"/decimal":    ErrInvalidURL,
		"/userinfo":   ErrUserinfo,
		"/rfc1918":    ErrBlockedAddress,
		"/gopher":     ErrScheme,
		"/relative-b": ErrBlockedAddress,
	}
	targets["/b-ip"] = ErrBlockedAddress
	loc := map[string]string{
		"/b-ip":       "http://127.0.0.1:" + bPort + "/",
		"/b-v6":       "http://[::1]:" + bPort + "/",
		"/b-mapped":   "http://[::ffff:127.0.0.1]:" + bPort + "/",
		"/b-local":    "http://localhost:" + bPort + "/",
		"/metadata":   "http://169.254.169.254/latest/meta-data/",
		"/metaname":   "http://metadata.google.internal/",
		"/file":       "file:///etc/passwd",
		"/decimal":    "http://2130706433:" + bPort + "/",
		"/userinfo":   "http://a:b@127.0.0.1:" + bPort + "/",
		"/rfc1918":    "http://192.168.0.1/",
		"/gopher":     "gopher://127.0.0.1:" + bPort + "/",
		"/relative-b": "//127.0.0.1:" + bPort + "/x",
	}
	a := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/robots.txt" {
			http.NotFound(w, r)
			return
		}
		http.Redirect(w, r, loc[r.URL.Path], http.StatusFound)
	}))
	defer a.Close()
	f := newTestFetcher(t, Options{Allow: hostPort(t, a), Resolver: newFakeResolver().set("localhost", "127.0.0.1")}, nil)
	for path, want := range targets {
		t.Run(path, func(t *testing.T) {
			_, err := f.Fetch(context.Background(), a.URL+path)
			if !errors.Is(err, want) {
				t.Fatalf("redirect to %s: err = %v, want %v", loc[path], err, want)
			}
		})
	}
	if n := bHits.Load(); n != 0 {
		t.Fatalf("private server B was reached %d times", n)
	}
	// Allowing the IP 127.0.0.1:portB also opens http://localhost:portB
	// (checked at dial time), but not other ports.
	f1 := newTestFetcher(t, Options{Allow: hostPort(t, a) + ",127.0.0.1:" + bPort, Resolver: newFakeResolver().set("localhost", "127.0.0.1")}, nil)
	if _, err := f1.Fetch(context.Background(), a.URL+"/b-local"); err != nil {
		t.Fatalf("localhost with loopback allowed: %v", err)
	}
	if _, err := f1.Fetch(context.Background(), "http://localhost:1/"); !errors.Is(err, ErrBlockedAddress) {
		t.Fatalf("localhost on another port: %v", err)
	}
	bHits.Store(0)
	// Sanity: with B allow-listed too, the same redirect succeeds.
	f2 := newTestFetcher(t, Options{Allow: hostPort(t, a) + "," + hostPort(t, b)}, nil)
	got, err := f2.Fetch(context.Background(), a.URL+"/b-ip")
	if err != nil || got.Text != "secret" {
		t.Fatalf("allowed redirect: %v %+v", err, got)
	}
	if len(got.Redirects) != 1 || !strings.HasSuffix(got.Redirects[0], "/b-ip") {
		t.Fatalf("redirect chain = %v", got.Redirects)
	}
}

func TestAllowList(t *testing.T) {
	al, err := ParseAllowList(" wiki.internal, .corp.example ,10.0.0.0/8, 127.0.0.1:8080, [::1]:9000 , *.lab.test, localhost:3000")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		host, port string
		ip         string
		want       bool
	}{
		{"wiki.internal", "80", "192.168.1.10", true},
		{"WIKI.internal.", "443", "192.168.1.10", true},
		{"wiki.internal", "80", "169.254.169.254", false}, // metadata never via name
		{"a.b.corp.example", "80", "172.16.0.1", true},
		{"corp.example", "80", "172.16.0.1", false},
		{"x.lab.test", "80", "10.9.9.9", true},
		{"anything", "80", "10.9.9.9", true}, // CIDR
		{"anything", "80", "127.0.0.1", false},
		{"anything", "8080", "127.0.0.1", true},
		{"anything", "9000", "::1", true},
		{"anything", "9001", "::1", false},
		{"localhost", "3000", "127.0.0.1", true},
		{"localhost", "3001", "127.0.0.1", false},
		{"public.example", "80", "93.184.216.34", true},
	}
	for _, tt := range tests {
		hostAllowed := al.allowsHost(tt.host, tt.port)
		err := al.permitted(netip.MustParseAddr(tt.ip), tt.port, hostAllowed)
		if (err == nil) != tt.want {
			t.Errorf("%s:%s -> %s: err=%v, want allowed=%v", tt.host, tt.port, tt.ip, err, tt.want)
		}
	}
	for _, bad := range []string{"10.0.0.0/33", "host:port", "a/b", "[::1", "fe80::1%eth0", "*"} {
		if _, err := ParseAllowList(bad); err == nil {
			t.Errorf("ParseAllowList(%q) accepted", bad)
		}
	}
	if al, err := ParseAllowList(""); err != nil || !al.Empty() {
		t.Errorf("empty list: %v %v", al, err)
	}
	if s := al.String(); !strings.Contains(s, "wiki.internal") || !strings.Contains(s, "10.0.0.0/8") {
		t.Errorf("String() = %q", s)
	}
}

func TestIsPublicAddr(t *testing.T) {
	for s, want := range map[string]bool{
		"8.8.8.8": true, "1.1.1.1": true, "93.184.216.34": true, "2606:4700::1111": true,
		"100.63.255.255": true, "100.128.0.0": true, "172.32.0.1": true, "192.169.0.1": true,
		"127.0.0.1": false, "::1": false, "::ffff:8.8.8.8": true, "64:ff9b::808:808": true,
		"2002:808:808::1": true, "2002:c0a8:101::1": false, "fe80::1%eth0": false,
	} {
		if got := IsPublicAddr(netip.MustParseAddr(s)); got != want {
			t.Errorf("IsPublicAddr(%s) = %v, want %v", s, got, want)
		}
	}
}
