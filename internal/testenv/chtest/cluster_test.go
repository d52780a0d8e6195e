package chtest

import (
	"encoding/xml"
	"testing"
)

// TestClusterXML parses the configuration of one server of a cluster of
// two shards (two replicas, then one) and checks what ClickHouse reads
// from it.
func TestClusterXML(t *testing.T) {
	servers := []clusterServer{
		{shard: 1, replica: 1, port: 9001, interserverPort: 9101},
		{shard: 1, replica: 2, port: 9002, interserverPort: 9102},
		{shard: 2, replica: 1, port: 9003, interserverPort: 9103},
	}
	var cfg struct {
		InterserverHost string `xml:"interserver_http_host"`
		InterserverPort int    `xml:"interserver_http_port"`
		ZooKeeper       struct {
			Host string `xml:"node>host"`
			Port int    `xml:"node>port"`
		} `xml:"zookeeper"`
		Shard   string `xml:"macros>shard"`
		Replica string `xml:"macros>replica"`
		DDLPath string `xml:"distributed_ddl>path"`
		Cluster struct {
			Shards []struct {
				Internal bool `xml:"internal_replication"`
				Replicas []struct {
					Host string `xml:"host"`
					Port int    `xml:"port"`
				} `xml:"replica"`
			} `xml:"shard"`
		} `xml:"remote_servers>skl"`
	}
	if err := xml.Unmarshal([]byte(clusterXML("skl", servers, servers[1], 2181)), &cfg); err != nil {
		t.Fatal(err)
	}
	if cfg.InterserverHost != "127.0.0.1" || cfg.InterserverPort != 9102 {
		t.Errorf("interserver %s:%d, want 127.0.0.1:9102", cfg.InterserverHost, cfg.InterserverPort)
	}
	if cfg.ZooKeeper.Host != "127.0.0.1" || cfg.ZooKeeper.Port != 2181 {
		t.Errorf("zookeeper %s:%d", cfg.ZooKeeper.Host, cfg.ZooKeeper.Port)
	}
	if cfg.Shard != "1" || cfg.Replica != "r2" {
		t.Errorf("macros shard %q replica %q, want 1 and r2", cfg.Shard, cfg.Replica)
	}
	if cfg.DDLPath == "" {
		t.Error("no distributed_ddl path: ON CLUSTER DDL would fail")
	}
	want := [][]int{{9001, 9002}, {9003}}
	if len(cfg.Cluster.Shards) != len(want) {
		t.Fatalf("%d shards, want %d", len(cfg.Cluster.Shards), len(want))
	}
	for i, sh := range cfg.Cluster.Shards {
		if !sh.Internal {
			t.Errorf("shard %d: internal_replication not set", i+1)
		}
		if len(sh.Replicas) != len(want[i]) {
			t.Errorf("shard %d: %d replicas, want %d", i+1, len(sh.Replicas), len(want[i]))
			continue
		}
		for j, r := range sh.Replicas {
			if r.Host != "127.0.0.1" || r.Port != want[i][j] {
				t.Errorf("shard %d replica %d: %s:%d, want port %d", i+1, j+1, r.Host, r.Port, want[i][j])
			}
		}
	}
}
