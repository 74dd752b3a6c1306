// Command floor is the HTTP path with no engine: a loopback server that
// answers POST /v1/executions?shape=NAME with the stream the runner sent for
// that shape, recorded in DIR/NAME.ndjson, and does nothing else. It reads
// the request body whole, writes the first line (accepted) and flushes it,
// then writes the rest at once, as the runner's Writer does for a burst
// that ends before its flush interval.
//
// bench/compare.sh times it beside the runner, in the same rounds and over
// the same kind of connection, so that a run says what carrying the same
// bytes through loopback to curl costs on that machine at that moment: a
// server that computed nothing could not be faster.
//
//	floor -dir DIR -addr 127.0.0.1:0
//
// It prints "floor: listening on http://ADDR" once it listens.
package main

import (
	"bytes"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"
)

func main() {
	dir := flag.String("dir", ".", "the directory of recorded streams, NAME.ndjson")
	addr := flag.String("addr", "127.0.0.1:0", "the address to listen on")
	flag.Parse()
	h, err := handler(*dir)
	if err != nil {
		log.Fatal(err)
	}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("floor: listening on http://%s\n", ln.Addr())
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Fatal(srv.Serve(ln))
}

// handler serves the streams recorded in dir, all read before it serves,
// so that no request reads a file.
func handler(dir string) (http.Handler, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.ndjson"))
	if err != nil {
		return nil, err
	}
	streams := map[string][]byte{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		streams[strings.TrimSuffix(filepath.Base(f), ".ndjson")] = b
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/capabilities", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"version":1}`+"\n")
	})
	mux.HandleFunc("POST /v1/executions", func(w http.ResponseWriter, r *http.Request) {
		if _, err := io.ReadAll(r.Body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		shape := r.URL.Query().Get("shape")
		stream, ok := streams[shape]
		if !ok {
			http.Error(w, fmt.Sprintf("shape %q: no stream recorded", shape), http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/x-ndjson")
		first := bytes.IndexByte(stream, '\n') + 1
		w.Write(stream[:first])
		http.NewResponseController(w).Flush()
		w.Write(stream[first:])
	})
	return mux, nil
}
