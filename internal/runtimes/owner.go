package runtimes

// Which process serves a --scrape target: the owner of the listening TCP
// socket at the URL's address and port (this network namespace's
// /proc/net/tcp and tcp6), looked for among the processes memdoctor reads
// anyway, then among all (once for each socket, when an OwnerMemo keeps
// the answer). One process read two ways (its endpoint and its
// hsperfdata, or its endpoint and its mappings) is then one runtime, not
// two; and a target keeps its pid from one sample to the next whether or
// not its process is among the reported ones, so its series keep their
// labels.

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"net"
	"net/url"
	"strconv"
	"strings"
	"sync"

	"github.com/memdoctor/memdoctor/internal/procfs"
)

// tcpListen is the state of a listening socket in /proc/net/tcp.
const tcpListen = "0A"

// targetAddr is the address a scrape URL connects to: an IP literal or
// localhost (a name may resolve to another host, whose port proves
// nothing here).
func targetAddr(raw string) (net.IP, int, bool) {
	u, err := url.Parse(raw)
	if err != nil {
		return nil, 0, false
	}
	host := u.Hostname()
	ip := net.ParseIP(host)
	if host == "localhost" {
		ip = net.IPv4(127, 0, 0, 1)
	}
	if ip == nil {
		return nil, 0, false
	}
	port, err := strconv.Atoi(u.Port())
	if u.Port() == "" {
		port, err = 80, nil
		if u.Scheme == "https" {
			port = 443
		}
	}
	if err != nil || port <= 0 || port > 65535 {
		return nil, 0, false
	}
	return ip, port, true
}

// localIP says whether ip is this host's: loopback or an interface address.
func localIP(ip net.IP) bool {
	if ip.IsLoopback() {
		return true
	}
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return false
	}
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.Equal(ip) {
			return true
		}
	}
	return false
}

// listeners returns the inodes of the listening sockets that accept a
// connection to ip:port: bound to ip itself, or to every address when ip
// is this host's.
func listeners(fsys procfs.FS, ip net.IP, port int) map[uint64]bool {
	out := map[uint64]bool{}
	var local *bool
	for _, name := range []string{"proc/net/tcp", "proc/net/tcp6"} {
		b, err := fsys.ReadFile(name)
		if err != nil {
			continue
		}
		sc := bufio.NewScanner(bytes.NewReader(b))
		sc.Scan() // header
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) < 10 || f[3] != tcpListen {
				continue
			}
			a, p, ok := strings.Cut(f[1], ":")
			if !ok {
				continue
			}
			lp, err := strconv.ParseUint(p, 16, 16)
			if err != nil || int(lp) != port {
				continue
			}
			addr := parseProcAddr(a)
			if addr == nil {
				continue
			}
			match := addr.Equal(ip)
			if !match && addr.IsUnspecified() {
				if local == nil {
					l := localIP(ip)
					local = &l
				}
				// a v6 wildcard accepts v4 too (unless v6only, which
				// /proc does not say); a v4 wildcard only v4
				match = *local && (len(a) == 32 || ip.To4() != nil)
			}
			if !match {
				continue
			}
			if ino, err := strconv.ParseUint(f[9], 10, 64); err == nil && ino > 0 {
				out[ino] = true
			}
		}
	}
	return out
}

// parseProcAddr parses an address of /proc/net/tcp: 8 hex digits (IPv4) or
// 32 (IPv6), each 32-bit word in host (little-endian) order.
func parseProcAddr(s string) net.IP {
	raw, err := hex.DecodeString(s)
	if err != nil || (len(raw) != 4 && len(raw) != 16) {
		return nil
	}
	ip := make(net.IP, len(raw))
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(ip[i:], binary.LittleEndian.Uint32(raw[i:]))
	}
	return ip
}

// socketOwners returns the pids, among pids, holding one of the sockets.
func socketOwners(fsys procfs.FS, pids []int, inodes map[uint64]bool) []int {
	var out []int
	for _, pid := range pids {
		dir := "proc/" + strconv.Itoa(pid) + "/fd"
		fds, err := fsys.ReadDir(dir)
		if err != nil {
			continue
		}
		for _, fd := range fds {
			l, err := fsys.ReadLink(dir + "/" + fd.Name())
			if err != nil {
				continue
			}
			n, ok := strings.CutPrefix(l, "socket:[")
			if !ok {
				continue
			}
			if ino, err := strconv.ParseUint(strings.TrimSuffix(n, "]"), 10, 64); err == nil && inodes[ino] {
				out = append(out, pid)
				break
			}
		}
	}
	return out
}

// OwnerMemo keeps, from one reading to the next (the recorder's), which
// process owns each listening socket a scrape target was matched to,
// found by reading every process' descriptors: the socket's inode is
// unique while it exists, so while it still listens and its owner lives
// the answer holds, and a socket that no process here owns (one of
// another pid namespace) is not looked for again. Without it a target
// whose process left the reported ones lost its pid label, and its
// series were split at each change (a window then judged a piece).
type OwnerMemo struct {
	mu    sync.Mutex
	owner map[uint64]int // socket inode → owner pid; 0: none here
}

// maxOwnerMemo bounds the memo: past it, it starts again.
const maxOwnerMemo = 4096

// ownerAnywhere returns the owners of the sockets among every process
// (the memo's answer while its owner lives).
func ownerAnywhere(fsys procfs.FS, inodes map[uint64]bool, memo *OwnerMemo) []int {
	if memo != nil {
		memo.mu.Lock()
		for ino := range inodes {
			if pid, ok := memo.owner[ino]; ok && (pid == 0 || fsys.Exists("proc/"+strconv.Itoa(pid))) {
				memo.mu.Unlock()
				if pid == 0 {
					return nil
				}
				return []int{pid}
			}
		}
		memo.mu.Unlock()
	}
	all, err := fsys.PIDs()
	if err != nil {
		return nil
	}
	owners := socketOwners(fsys, all, inodes)
	if memo != nil {
		pid := 0
		if len(owners) > 0 {
			pid = owners[0]
		}
		memo.mu.Lock()
		if memo.owner == nil || len(memo.owner) >= maxOwnerMemo {
			memo.owner = map[uint64]int{}
		}
		for ino := range inodes {
			memo.owner[ino] = pid
		}
		memo.mu.Unlock()
	}
	return owners
}
