// Command modelserver stands in for a model server on the real node, and doubles as its traffic client.
//
//	modelserver serve          HTTP on $PORT (8080): / answers with the pod's hostname; /healthz is the
//	                           readiness endpoint; /fail makes it answer 503 until /recover; /exit?code=N
//	                           makes the process exit with N (a crash the kubelet sees).
//	modelserver get URL        one GET; prints the body (also to /dev/termination-log, so the answer shows in
//	                           the pod's status) and exits 0 on a 2xx, 1 otherwise. An https URL is called as
//	                           an in-cluster client: the ServiceAccount's token, and its ca.crt as the only
//	                           trusted root (the API server's certificate is verified, never skipped).
//	modelserver load URL SECS  GETs without pause for SECS seconds, a new connection per request (so every
//	                           request goes through the Service's current kube-proxy rules) and a 1 s timeout;
//	                           reports "ok=N failed=M" (plus the first failure) like get, and exits 0.
package main

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"
)

func main() {
	if len(os.Args) >= 3 && os.Args[1] == "get" {
		os.Exit(get(os.Args[2]))
	}
	if len(os.Args) >= 4 && os.Args[1] == "load" {
		secs, err := strconv.Atoi(os.Args[3])
		if err != nil {
			report(fmt.Sprintf("load: SECONDS %q: %v", os.Args[3], err))
			os.Exit(1)
		}
		load(os.Args[2], time.Duration(secs)*time.Second)
		return
	}
	serve()
}

func serve() {
	host, _ := os.Hostname()
	port := os.Getenv("PORT")
	if port == "" {
		port = "8080"
	}
	var failing atomic.Bool
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, "hello from %s\n", host) })
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) {
		if failing.Load() {
			http.Error(w, "told to fail", http.StatusServiceUnavailable)
			return
		}
		fmt.Fprintln(w, "ok")
	})
	mux.HandleFunc("/fail", func(w http.ResponseWriter, _ *http.Request) { failing.Store(true); fmt.Fprintln(w, "failing") })
	mux.HandleFunc("/recover", func(w http.ResponseWriter, _ *http.Request) { failing.Store(false); fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/exit", func(w http.ResponseWriter, r *http.Request) {
		code, err := strconv.Atoi(r.URL.Query().Get("code"))
		if err != nil {
			code = 1
		}
		fmt.Fprintf(w, "exiting with %d\n", code)
		w.(http.Flusher).Flush()
		// Exit after the answer is on the wire, so the caller knows the request was taken.
		go func() { time.Sleep(100 * time.Millisecond); os.Exit(code) }()
	})
	srv := &http.Server{Addr: ":" + port, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		stop := make(chan os.Signal, 1)
		signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
		<-stop
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = srv.Shutdown(ctx)
	}()
	fmt.Printf("modelserver %s listening on :%s\n", host, port)
	if err := srv.ListenAndServe(); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
}

const serviceAccount = "/var/run/secrets/kubernetes.io/serviceaccount"

func get(url string) int {
	client := &http.Client{Timeout: 10 * time.Second}
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		report(fmt.Sprintf("GET %s: %v", url, err))
		return 1
	}
	if strings.HasPrefix(url, "https://") {
		ca, errCA := os.ReadFile(serviceAccount + "/ca.crt")
		token, errToken := os.ReadFile(serviceAccount + "/token")
		if errCA != nil || errToken != nil {
			report(fmt.Sprintf("GET %s: no ServiceAccount credentials mounted (%v, %v)", url, errCA, errToken))
			return 1
		}
		roots := x509.NewCertPool()
		roots.AppendCertsFromPEM(ca)
		client.Transport = &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12}}
		req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	}
	res, err := client.Do(req)
	if err != nil {
		report(fmt.Sprintf("GET %s: %v", url, err))
		return 1
	}
	defer res.Body.Close()
	// The kubelet keeps at most 4096 bytes of a termination message, from its end: keep the status line in.
	body, _ := io.ReadAll(io.LimitReader(res.Body, 2048))
	report(fmt.Sprintf("%d %s", res.StatusCode, body))
	if res.StatusCode/100 != 2 {
		return 1
	}
	return 0
}

func load(url string, d time.Duration) {
	client := &http.Client{Timeout: time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	var ok, failed int
	first := ""
	for end := time.Now().Add(d); time.Now().Before(end); {
		res, err := client.Get(url)
		if err == nil {
			_, _ = io.Copy(io.Discard, res.Body)
			res.Body.Close()
			if res.StatusCode/100 != 2 {
				err = fmt.Errorf("status %d", res.StatusCode)
			}
		}
		if err != nil {
			failed++
			if first == "" {
				first = err.Error()
			}
			continue
		}
		ok++
	}
	msg := fmt.Sprintf("ok=%d failed=%d", ok, failed)
	if first != "" {
		// Short: the kubelet keeps only the last 4096 bytes of a termination message.
		msg += " first=" + first[:min(len(first), 300)]
	}
	report(msg)
}

// report prints the outcome and leaves it where the kubelet copies it into the container's terminated state.
func report(msg string) {
	fmt.Println(msg)
	_ = os.WriteFile("/dev/termination-log", []byte(msg), 0o644)
}
