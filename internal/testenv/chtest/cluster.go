package chtest

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/skewlens/skewlens/internal/testenv"
	"github.com/skewlens/skewlens/internal/testenv/zktest"
)

// Cluster is a ClickHouse cluster of one test: servers on loopback that
// name each other in remote_servers, share one ZooKeeper (for the
// Replicated tables and ON CLUSTER DDL) and carry the {shard} and
// {replica} macros.
type Cluster struct {
	// Name is the cluster's name in remote_servers (ON CLUSTER Name).
	Name string
	// Shards holds the servers of each shard: Shards[i][j] is replica
	// r<j+1> of shard <i+1>. Halt and Resume one to take it away and
	// bring it back with its data.
	Shards [][]*testenv.Process
	// ZooKeeper is the cluster's coordination server.
	ZooKeeper *testenv.Process
}

// Addrs returns the native-protocol addresses of every server, shard by
// shard.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, shard := range c.Shards {
		for _, p := range shard {
			out = append(out, p.Addr)
		}
	}
	return out
}

// clusterServer is one server of a cluster before it starts.
type clusterServer struct {
	shard, replica        int
	port, interserverPort int
}

// StartCluster starts a ZooKeeper server and a ClickHouse cluster named
// name with one shard per element of replicas, of that many replicas
// each (StartCluster(t, "c", 2, 1): shard 1 with two replicas, shard 2
// with one), and stops them when t ends. Every shard sets
// internal_replication, as Replicated tables need: a Distributed insert
// goes to one replica per shard, and replication copies it to the
// others. The servers start one after the other, each on ports chosen
// beforehand, since each one's configuration names all of them. It skips
// t under -short and fails t when a server cannot be started.
func StartCluster(t testing.TB, name string, replicas ...int) *Cluster {
	t.Helper()
	testenv.SkipShort(t, "a ClickHouse cluster")
	if len(replicas) == 0 {
		t.Fatal("chtest: StartCluster needs at least one shard")
	}
	zk := zktest.StartPrivate(t)
	var servers []clusterServer
	for i, n := range replicas {
		for j := range n {
			port, err := testenv.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			inter, err := testenv.FreePort()
			if err != nil {
				t.Fatal(err)
			}
			servers = append(servers, clusterServer{shard: i + 1, replica: j + 1, port: port, interserverPort: inter})
		}
	}
	c := &Cluster{Name: name, ZooKeeper: zk, Shards: make([][]*testenv.Process, len(replicas))}
	for _, s := range servers {
		l := launcher()
		l.Name = fmt.Sprintf("clickhouse-s%dr%d", s.shard, s.replica)
		l.Port = s.port
		l.Prepare = func(dir string) error {
			if err := os.MkdirAll(filepath.Join(dir, "config.d"), 0o755); err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(dir, "config.d", "cluster.xml"),
				[]byte(clusterXML(name, servers, s, zk.Port)), 0o644)
		}
		p, err := l.Start()
		if err != nil {
			t.Fatalf("chtest: cannot start %s of cluster %s: %v", l.Name, name, err)
		}
		t.Cleanup(func() {
			// A test that failed on the cluster (an ON CLUSTER statement
			// that never finished, a replica that never caught up) is
			// read from the servers' logs, which Stop removes.
			if t.Failed() {
				t.Logf("chtest: %s of cluster %s, its logs' last lines:\n%s", l.Name, name, p.LogTail(40))
			}
			if err := p.Stop(); err != nil {
				t.Errorf("chtest: %v", err)
			}
		})
		c.Shards[s.shard-1] = append(c.Shards[s.shard-1], p)
	}
	return c
}

// clusterXML returns the configuration one server of the cluster adds to
// internal/localch/start.sh's config.xml (ClickHouse merges every file of
// config.d next to it): the interserver port replicas fetch parts from,
// ZooKeeper, the macros, the queue of ON CLUSTER DDL and the cluster.
// The ZooKeeper session timeout is short (6 s, default 30 s) so that a
// killed replica's session, which keeps its replica marked active,
// expires soon and the replica can take its place again once it is back.
func clusterXML(name string, servers []clusterServer, self clusterServer, zkPort int) string {
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0"?>
<yandex>
    <interserver_http_host>127.0.0.1</interserver_http_host>
    <interserver_http_port>%d</interserver_http_port>
    <zookeeper>
        <node><host>127.0.0.1</host><port>%d</port></node>
        <session_timeout_ms>6000</session_timeout_ms>
    </zookeeper>
    <macros>
        <shard>%d</shard>
        <replica>r%d</replica>
    </macros>
    <distributed_ddl>
        <path>/clickhouse/task_queue/ddl</path>
    </distributed_ddl>
    <remote_servers>
        <%s>
`, self.interserverPort, zkPort, self.shard, self.replica, name)
	shard := 0
	for _, s := range servers {
		if s.shard != shard {
			if shard != 0 {
				b.WriteString("            </shard>\n")
			}
			shard = s.shard
			b.WriteString("            <shard>\n                <internal_replication>true</internal_replication>\n")
		}
		fmt.Fprintf(&b, "                <replica><host>127.0.0.1</host><port>%s</port></replica>\n", strconv.Itoa(s.port))
	}
	fmt.Fprintf(&b, "            </shard>\n        </%s>\n    </remote_servers>\n</yandex>\n", name)
	return b.String()
}
