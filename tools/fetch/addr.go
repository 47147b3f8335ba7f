package fetch

import (
	"fmt"
	"net"
	"net/netip"
	"strconv"
	"strings"
)

// blockedV4 lists IPv4 ranges that are never fetched unless allow-listed:
// everything in the IANA special-purpose registry that is not globally
// reachable, plus multicast and the reserved 240/4 block (which contains the
// limited broadcast address).
var blockedV4 = mustPrefixes(
	"0.0.0.0/8",       // "this network", incl. unspecified 0.0.0.0
	"10.0.0.0/8",      // RFC 1918
	"100.64.0.0/10",   // CGNAT (RFC 6598); also Alibaba metadata 100.100.100.200
	"127.0.0.0/8",     // loopback
	"169.254.0.0/16",  // link-local; AWS/GCP/Azure metadata 169.254.169.254
	"172.16.0.0/12",   // RFC 1918
	"192.0.0.0/24",    // IETF protocol assignments (incl. 192.0.0.192 OCI metadata)
	"192.0.2.0/24",    // TEST-NET-1
	"192.31.196.0/24", // AS112-v4
	"192.52.193.0/24", // AMT
	"192.88.99.0/24",  // deprecated 6to4 relay anycast
	"192.168.0.0/16",  // RFC 1918
	"192.175.48.0/24", // direct delegation AS112
	"198.18.0.0/15",   // benchmarking
	"198.51.100.0/24", // TEST-NET-2
	"203.0.113.0/24",  // TEST-NET-3
	"224.0.0.0/4",     // multicast
	"240.0.0.0/4",     // reserved, incl. 255.255.255.255 broadcast
)

// blockedV6 lists IPv6 ranges that are never fetched unless allow-listed.
// IPv4-mapped (::ffff:0:0/96) addresses are unmapped and checked as IPv4
// before this list is consulted; NAT64 and 6to4 have their embedded IPv4
// address checked (see embeddedV4).
var blockedV6 = mustPrefixes(
	"::/96",          // unspecified, loopback and deprecated IPv4-compatible ::a.b.c.d
	"64:ff9b:1::/48", // local-use NAT64 (RFC 8215)
	"100::/64",       // discard-only
	"2001::/23",      // IETF protocol assignments: Teredo, benchmarking, ORCHID, ...
	"2001:db8::/32",  // documentation
	"3fff::/20",      // documentation (RFC 9637)
	"5f00::/16",      // SRv6 SIDs
	"fc00::/7",       // unique-local, incl. AWS metadata fd00:ec2::254
	"fe80::/10",      // link-local
	"fec0::/10",      // deprecated site-local
	"ff00::/8",       // multicast
)

var (
	globalUnicastV6 = netip.MustParsePrefix("2000::/3")
	nat64WellKnown  = netip.MustParsePrefix("64:ff9b::/96")
	sixToFour       = netip.MustParsePrefix("2002::/16")
)

// metadataAddrs are cloud instance-metadata endpoints. They are inside
// blocked ranges anyway; they are listed so that an allow-list entry naming a
// host (or a CIDR that merely overlaps) does not open them. Only an allow-list
// IP or CIDR that contains the address exactly opens it.
var metadataAddrs = map[netip.Addr]bool{
	netip.MustParseAddr("169.254.169.254"): true, // AWS, GCP, Azure, OpenStack, DigitalOcean
	netip.MustParseAddr("169.254.170.2"):   true, // AWS ECS task metadata
	netip.MustParseAddr("100.100.100.200"): true, // Alibaba Cloud
	netip.MustParseAddr("192.0.0.192"):     true, // Oracle Cloud
	netip.MustParseAddr("fd00:ec2::254"):   true, // AWS IMDS over IPv6
}

// metadataHosts are host names refused before any DNS lookup unless the
// allow-list names them.
var metadataHosts = map[string]bool{
	"metadata.google.internal":   true,
	"metadata.goog":              true,
	"metadata":                   true,
	"instance-data":              true,
	"instance-data.ec2.internal": true,
	"metadata.azure.internal":    true,
}

func mustPrefixes(ss ...string) []netip.Prefix {
	out := make([]netip.Prefix, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParsePrefix(s)
	}
	return out
}

// IsPublicAddr reports whether ip is a globally reachable unicast address that
// the fetcher may dial without an allow-list entry.
func IsPublicAddr(ip netip.Addr) bool {
	return blockReason(ip) == ""
}

// blockReason returns why ip is not public, or "" if it is.
func blockReason(ip netip.Addr) string {
	if !ip.IsValid() {
		return "invalid address"
	}
	ip = ip.WithZone("")
	if ip.Is4In6() {
		ip = ip.Unmap()
	}
	if metadataAddrs[ip] {
		return "cloud metadata address"
	}
	if ip.Is4() {
		for _, p := range blockedV4 {
			if p.Contains(ip) {
				return "special-purpose IPv4 range " + p.String()
			}
		}
		return ""
	}
	if v4, ok := embeddedV4(ip); ok {
		if r := blockReason(v4); r != "" {
			return "IPv6 embedding " + v4.String() + ": " + r
		}
		return ""
	}
	for _, p := range blockedV6 {
		if p.Contains(ip) {
			return "special-purpose IPv6 range " + p.String()
		}
	}
	if !globalUnicastV6.Contains(ip) {
		return "IPv6 address outside global unicast 2000::/3"
	}
	return ""
}

// embeddedV4 extracts the IPv4 address from NAT64 (64:ff9b::/96) and 6to4
// (2002::/16) addresses so it can be checked like a plain IPv4 address.
func embeddedV4(ip netip.Addr) (netip.Addr, bool) {
	b := ip.As16()
	switch {
	case nat64WellKnown.Contains(ip):
		return netip.AddrFrom4([4]byte{b[12], b[13], b[14], b[15]}), true
	case sixToFour.Contains(ip):
		return netip.AddrFrom4([4]byte{b[2], b[3], b[4], b[5]}), true
	}
	return netip.Addr{}, false
}

// AllowList permits private targets that would otherwise be blocked. The
// zero value allows nothing. It is immutable after ParseAllowList.
type AllowList struct {
	hosts    []allowHost
	prefixes []allowPrefix
}

type allowHost struct {
	name string // lower case, no trailing dot; ".example.com" = any subdomain
	port string // "" = any port
}

type allowPrefix struct {
	prefix netip.Prefix
	port   string
}

// ParseAllowList parses the DEEPRESEARCH_FETCH_ALLOW format: a comma- (or
// space-) separated list of entries, each one of
//
//	wiki.internal          a host name (exact, case-insensitive)
//	.corp.example          any subdomain of corp.example (also *.corp.example)
//	10.1.2.3               an IP address
//	10.0.0.0/8, fd00::/8   a CIDR
//	localhost:8080         any of the above (except a CIDR) with a port:
//	127.0.0.1:8080         only that port is permitted
//	[::1]:8080
//
// A host-name entry permits whatever that name resolves to, except cloud
// metadata addresses; an IP or CIDR entry permits those addresses under any
// name. An empty string yields an empty list.
func ParseAllowList(s string) (*AllowList, error) {
	al := &AllowList{}
	fields := strings.FieldsFunc(s, func(r rune) bool { return r == ',' || r == ' ' || r == '\t' || r == '\n' || r == ';' })
	for _, f := range fields {
		if err := al.add(f); err != nil {
			return nil, fmt.Errorf("fetch: allow-list entry %q: %w", f, err)
		}
	}
	return al, nil
}

func (al *AllowList) add(entry string) error {
	if strings.Contains(entry, "/") {
		p, err := netip.ParsePrefix(entry)
		if err != nil {
			return err
		}
		al.prefixes = append(al.prefixes, allowPrefix{prefix: p.Masked()})
		return nil
	}
	host, port := entry, ""
	if h, p, err := net.SplitHostPort(entry); err == nil {
		host, port = h, p
		n, err := strconv.Atoi(p)
		if err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("bad port %q", p)
		}
	} else if strings.HasPrefix(entry, "[") && strings.HasSuffix(entry, "]") {
		host = entry[1 : len(entry)-1]
	}
	if ip, err := netip.ParseAddr(host); err == nil {
		if ip.Zone() != "" {
			return fmt.Errorf("IPv6 zones are not supported")
		}
		ip = ip.Unmap()
		al.prefixes = append(al.prefixes, allowPrefix{prefix: netip.PrefixFrom(ip, ip.BitLen()), port: port})
		return nil
	}
	name := strings.TrimSuffix(strings.ToLower(host), ".")
	name = strings.TrimPrefix(name, "*")
	if name == "" || name == "." || strings.ContainsAny(name, "*/@?#[]") {
		return fmt.Errorf("bad host name")
	}
	al.hosts = append(al.hosts, allowHost{name: name, port: port})
	return nil
}

// Empty reports whether the list permits nothing.
func (al *AllowList) Empty() bool {
	return al == nil || (len(al.hosts) == 0 && len(al.prefixes) == 0)
}

// String renders the list in the format ParseAllowList reads.
func (al *AllowList) String() string {
	if al == nil {
		return ""
	}
	var parts []string
	for _, h := range al.hosts {
		parts = append(parts, joinPort(h.name, h.port))
	}
	for _, p := range al.prefixes {
		s := p.prefix.String()
		if p.prefix.IsSingleIP() {
			s = p.prefix.Addr().String()
			if p.port != "" {
				s = net.JoinHostPort(s, p.port)
			}
		}
		parts = append(parts, s)
	}
	return strings.Join(parts, ",")
}

func joinPort(h, p string) string {
	if p == "" {
		return h
	}
	return net.JoinHostPort(h, p)
}

// allowsHost reports whether host (a name, not an IP) is allow-listed for port.
func (al *AllowList) allowsHost(host, port string) bool {
	if al == nil {
		return false
	}
	host = strings.TrimSuffix(strings.ToLower(host), ".")
	for _, h := range al.hosts {
		if h.port != "" && h.port != port {
			continue
		}
		if strings.HasPrefix(h.name, ".") {
			if strings.HasSuffix(host, h.name) {
				return true
			}
		} else if host == h.name {
			return true
		}
	}
	return false
}

// allowsIP reports whether ip is allow-listed by an IP or CIDR entry for port.
func (al *AllowList) allowsIP(ip netip.Addr, port string) bool {
	if al == nil {
		return false
	}
	ip = ip.WithZone("").Unmap()
	for _, p := range al.prefixes {
		if p.port != "" && p.port != port {
			continue
		}
		if p.prefix.Contains(ip) {
			return true
		}
	}
	return false
}

// permitted decides whether the dialer may connect to ip:port for a request
// to host. hostAllowed says an allow-list host-name entry matched host.
func (al *AllowList) permitted(ip netip.Addr, port string, hostAllowed bool) error {
	ip = ip.WithZone("").Unmap()
	if al.allowsIP(ip, port) {
		return nil
	}
	reason := blockReason(ip)
	if reason == "" {
		return nil
	}
	if hostAllowed && !metadataAddrs[ip] {
		return nil
	}
	return fmt.Errorf("%w: %s is a %s", ErrBlockedAddress, ip, reason)
}
