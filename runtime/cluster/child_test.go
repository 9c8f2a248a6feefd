package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// childEnv makes the test binary run one NATS server (runChild) instead
// of the tests, so that a test can kill a server the way a crash does.
const childEnv = "BATON_CLUSTER_TEST_SERVER"

type childSpec struct {
	Name        string `json:"name"`
	Dir         string `json:"dir"`
	Port        int    `json:"port"`
	ClusterPort int    `json:"cluster_port"`
	Routes      []int  `json:"routes"`
}

// runChild serves until SIGTERM (a clean shutdown) or SIGKILL.
func runChild(spec string) int {
	var c childSpec
	if err := json.Unmarshal([]byte(spec), &c); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGTERM)
	s, err := startServerOn(c.Dir, c.Name, c.Port, c.ClusterPort, c.Routes)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	fmt.Println("ready")
	<-sigs
	s.Shutdown()
	s.WaitForShutdown()
	return 0
}

// child is a NATS server in its own process; exited is closed once the
// process has ended.
type child struct {
	name   string
	url    string
	cmd    *exec.Cmd
	exited chan struct{}
}

// startChildCluster runs n clustered servers as processes of the test
// binary and waits until JetStream answers.
func startChildCluster(t *testing.T, n int) []*child {
	t.Helper()
	ports := freePorts(t, 2*n)
	clusterPorts := ports[n:]
	out := make([]*child, n)
	for i := range n {
		spec, _ := json.Marshal(childSpec{Name: fmt.Sprintf("p%d", i+1), Dir: t.TempDir(), Port: ports[i],
			ClusterPort: clusterPorts[i], Routes: clusterPorts})
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"="+string(spec))
		cmd.Stderr = os.Stderr
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{})
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			<-exited
		})
		ready := make(chan bool, 1)
		go func() {
			line, _ := bufio.NewReader(stdout).ReadString('\n')
			ready <- line == "ready\n"
			// Wait only once the pipe is read; it closes the pipe.
			_ = cmd.Wait()
			close(exited)
		}()
		select {
		case ok := <-ready:
			if !ok {
				t.Fatalf("server %d did not start", i+1)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("server %d did not start", i+1)
		}
		out[i] = &child{name: fmt.Sprintf("p%d", i+1), url: fmt.Sprintf("nats://127.0.0.1:%d", ports[i]), cmd: cmd, exited: exited}
	}
	nc, err := nats.Connect(out[0].url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, 30*time.Second, "JetStream in the server processes", func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err == nil
	})
	return out
}
