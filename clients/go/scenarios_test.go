package kairos_test

// The scenario list every Kairos client runs (Python, Go, TypeScript), against
// a live coordinator and agent started by the repository's jest suite
// (clients/clients.pg.test.ts), given by KAIROS_COORDINATOR, KAIROS_TOKEN (a
// writer of the namespace the agent serves, tasks: sleep) and
// KAIROS_OTHER_TOKEN (a writer of another namespace).

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"os"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	kairos "kairos.dev/client"
)

func env(t *testing.T, name string) string {
	t.Helper()
	value := os.Getenv(name)
	if value == "" {
		t.Fatalf("%s is not set: run these tests through clients/clients.pg.test.ts (npm test)", name)
	}
	return value
}

func dial(t *testing.T, token string) *kairos.Client {
	t.Helper()
	client, err := kairos.Dial(kairos.Options{Address: env(t, "KAIROS_COORDINATOR"), Token: token})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// eventually polls check until it reports done, failing after a minute.
func eventually(t *testing.T, what string, check func() bool) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for !check() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// must(call(...))(t) is call's value, failing the test on its error.
func must[T any](value T, err error) func(t *testing.T) T {
	return func(t *testing.T) T {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return value
	}
}

func kairosError(t *testing.T, err error) *kairos.Error {
	t.Helper()
	var kerr *kairos.Error
	if !errors.As(err, &kerr) {
		t.Fatalf("want a *kairos.Error, got %v", err)
	}
	return kerr
}

func randomID() string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

func at(t time.Time) *time.Time { return &t }

var ctx = context.Background()

func TestOneOffJobRunsOnce(t *testing.T) {
	c := dial(t, env(t, "KAIROS_TOKEN"))
	job := must(c.CreateJob(ctx, kairos.NewJob{Task: "sleep", RunAt: at(time.Now()), Payload: map[string]any{"seconds": 0}}))(t).Job
	eventually(t, "COMPLETED", func() bool { return must(c.GetJob(ctx, job.JobID))(t).State == "COMPLETED" })
	runs := must(c.Runs(ctx, job.JobID))(t)
	if len(runs) != 1 || runs[0].Outcome != "SUCCEEDED" {
		t.Fatalf("want one SUCCEEDED run, got %+v", runs)
	}
	if job.Schedule != "" || job.RunAt == nil {
		t.Fatalf("a one-off job has RunAt and no Schedule: %+v", job)
	}
}

func TestRecurringJobRunsDistinctOccurrences(t *testing.T) {
	c := dial(t, env(t, "KAIROS_TOKEN"))
	job := must(c.CreateJob(ctx, kairos.NewJob{Task: "sleep", Schedule: "*/2 * * * * *", Payload: map[string]any{"seconds": 0}}))(t).Job
	var succeeded []kairos.Run
	eventually(t, "two occurrences", func() bool {
		succeeded = succeeded[:0]
		for _, run := range must(c.Runs(ctx, job.JobID))(t) {
			if run.Outcome == "SUCCEEDED" {
				succeeded = append(succeeded, run)
			}
		}
		return len(succeeded) >= 2
	})
	seen := map[time.Time]bool{}
	for _, run := range succeeded {
		if seen[run.ScheduledFor] || run.ScheduledFor.Second()%2 != 0 {
			t.Fatalf("occurrences must be distinct even seconds: %+v", succeeded)
		}
		seen[run.ScheduledFor] = true
	}
	if err := c.CancelJob(ctx, job.JobID); kairos.ReasonOf(err) == kairos.ReasonJobClaimed {
		must(c.AbortRun(ctx, job.JobID, true))(t)
	} else if err != nil {
		t.Fatal(err)
	}
}

func TestCancelBeforeDue(t *testing.T) {
	c := dial(t, env(t, "KAIROS_TOKEN"))
	job := must(c.CreateJob(ctx, kairos.NewJob{Task: "sleep", RunAt: at(time.Now().Add(time.Hour)), Payload: map[string]any{"seconds": 0}}))(t).Job
	if err := c.CancelJob(ctx, job.JobID); err != nil {
		t.Fatal(err)
	}
	if state := must(c.GetJob(ctx, job.JobID))(t).State; state != "CANCELLED" {
		t.Fatalf("want CANCELLED, got %s", state)
	}
}

func TestCancelOfARunningJobNamesWhoHoldsIt(t *testing.T) {
	c := dial(t, env(t, "KAIROS_TOKEN"))
	job := must(c.CreateJob(ctx, kairos.NewJob{Task: "sleep", RunAt: at(time.Now()), Payload: map[string]any{"seconds": 30}}))(t).Job
	var claimed kairos.Job
	eventually(t, "CLAIMED", func() bool {
		claimed = must(c.GetJob(ctx, job.JobID))(t)
		return claimed.State == "CLAIMED"
	})
	kerr := kairosError(t, c.CancelJob(ctx, job.JobID))
	if kerr.Reason != kairos.ReasonJobClaimed || kerr.Claim == nil {
		t.Fatalf("want JOB_CLAIMED with a claim, got %v", kerr)
	}
	if kerr.Claim.LeaseGeneration != claimed.LeaseGeneration || kerr.Claim.AgentID != claimed.LeaseOwner || kerr.Claim.RunID == "" {
		t.Fatalf("claim %+v does not match the job %+v", kerr.Claim, claimed)
	}
	aborted := must(c.AbortRun(ctx, job.JobID, false))(t)
	if aborted.RunID != kerr.Claim.RunID {
		t.Fatalf("abort stopped run %s, the claim named %s", aborted.RunID, kerr.Claim.RunID)
	}
	eventually(t, "CANCELLED after abort", func() bool { return must(c.GetJob(ctx, job.JobID))(t).State == "CANCELLED" })
}

func TestUnknownID(t *testing.T) {
	c := dial(t, env(t, "KAIROS_TOKEN"))
	_, err := c.GetJob(ctx, "0190a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d")
	if kairos.ReasonOf(err) != kairos.ReasonJobNotFound {
		t.Fatalf("want JOB_NOT_FOUND, got %v", err)
	}
}

func TestInvalidInputNamesTheField(t *testing.T) {
	c := dial(t, env(t, "KAIROS_TOKEN"))
	cases := map[string]kairos.NewJob{
		"max_attempts":    {Task: "sleep", RunAt: at(time.Now()), Payload: map[string]any{"seconds": 0}, MaxAttempts: 1000},
		"payload.seconds": {Task: "sleep", RunAt: at(time.Now())},
		"schedule":        {Task: "sleep", Schedule: "not cron", Payload: map[string]any{"seconds": 0}},
	}
	for field, job := range cases {
		_, err := c.CreateJob(ctx, job)
		if kerr := kairosError(t, err); kerr.Field != field || kerr.Reason != kairos.ReasonInvalidArgument {
			t.Fatalf("want INVALID_ARGUMENT naming %s, got %v", field, kerr)
		}
	}
}

func TestIdempotencyKey(t *testing.T) {
	c := dial(t, env(t, "KAIROS_TOKEN"))
	key := "go-" + randomID()
	runAt := at(time.Now().Add(time.Hour).Truncate(time.Millisecond))
	first := must(c.CreateJob(ctx, kairos.NewJob{Task: "sleep", RunAt: runAt, Payload: map[string]any{"seconds": 0}, IdempotencyKey: key}))(t)
	again := must(c.CreateJob(ctx, kairos.NewJob{Task: "sleep", RunAt: runAt, Payload: map[string]any{"seconds": 0}, IdempotencyKey: key}))(t)
	if !first.Created || again.Created || again.Job.JobID != first.Job.JobID {
		t.Fatalf("a repeat with the same key must return the first job: %+v %+v", first, again)
	}
	_, err := c.CreateJob(ctx, kairos.NewJob{Task: "sleep", RunAt: runAt, Payload: map[string]any{"seconds": 1}, IdempotencyKey: key})
	if kairos.ReasonOf(err) != kairos.ReasonIdempotencyKeyReused {
		t.Fatalf("want IDEMPOTENCY_KEY_REUSED, got %v", err)
	}
	if err := c.CancelJob(ctx, first.Job.JobID); err != nil {
		t.Fatal(err)
	}
}

func TestBatchCreateAnswersEachJob(t *testing.T) {
	c := dial(t, env(t, "KAIROS_TOKEN"))
	key := "go-batch-" + randomID()
	later := at(time.Now().Add(time.Hour).Truncate(time.Millisecond))
	results := must(c.CreateJobs(ctx, []kairos.NewJob{
		{Task: "sleep", RunAt: at(time.Now()), Payload: map[string]any{"seconds": 0}},
		{Task: "sleep", Schedule: "not cron", Payload: map[string]any{"seconds": 0}},
		{Task: "sleep", RunAt: later, Payload: map[string]any{"seconds": 0}, IdempotencyKey: key},
		{Task: "sleep", RunAt: later, Payload: map[string]any{"seconds": 0}, IdempotencyKey: key},
	}))(t)
	if len(results) != 4 || !results[0].Created || results[1].Err == nil || !results[2].Created || results[3].Created || results[3].Err != nil {
		t.Fatalf("want created, refused, created, repeat: %+v", results)
	}
	if kerr := kairosError(t, results[1].Err); kerr.Field != "schedule" || kerr.Reason != kairos.ReasonInvalidArgument {
		t.Fatalf("want INVALID_ARGUMENT naming schedule, got %v", kerr)
	}
	if results[3].JobID != results[2].JobID {
		t.Fatalf("a keyed repeat must answer the first job: %+v", results)
	}
	eventually(t, "COMPLETED", func() bool { return must(c.GetJob(ctx, results[0].JobID))(t).State == "COMPLETED" })
	if runs := must(c.Runs(ctx, results[0].JobID))(t); len(runs) != 1 || runs[0].Outcome != "SUCCEEDED" {
		t.Fatalf("want one SUCCEEDED run, got %+v", runs)
	}
	if err := c.CancelJob(ctx, results[2].JobID); err != nil {
		t.Fatal(err)
	}
}

func TestPagingThrough250Jobs(t *testing.T) {
	c := dial(t, env(t, "KAIROS_TOKEN"))
	task := "page-" + randomID()
	created := map[string]bool{}
	for range 250 {
		created[must(c.CreateJob(ctx, kairos.NewJob{Task: task, RunAt: at(time.Now().Add(24 * time.Hour))}))(t).Job.JobID] = true
	}
	first, next, err := c.ListJobsPage(ctx, kairos.JobFilter{Task: task, Limit: 100})
	if err != nil || len(first) != 100 || next == "" {
		t.Fatalf("first page: %d jobs, next %q, %v", len(first), next, err)
	}
	listed := map[string]bool{}
	count := 0
	if err := c.Jobs(ctx, kairos.JobFilter{Task: task, Limit: 100}, func(job kairos.Job) bool {
		listed[job.JobID] = true
		count++
		return true
	}); err != nil {
		t.Fatal(err)
	}
	if count != 250 || len(listed) != 250 {
		t.Fatalf("want 250 distinct jobs, got %d (%d distinct)", count, len(listed))
	}
	for id := range created {
		if !listed[id] {
			t.Fatalf("job %s was not listed", id)
		}
	}
	_, _, err = c.ListJobsPage(ctx, kairos.JobFilter{Task: task, Cursor: "not-a-cursor"})
	if kerr := kairosError(t, err); kerr.Field != "cursor" {
		t.Fatalf("a bad cursor must name the field: %v", kerr)
	}
}

func TestMissingToken(t *testing.T) {
	t.Setenv("KAIROS_TOKEN", "") // an empty Options.Token falls back to it
	c := dial(t, "")
	_, err := c.GetJob(ctx, "0190a3c4-5e6f-7a8b-9c0d-1e2f3a4b5c6d")
	if kairos.ReasonOf(err) != kairos.ReasonUnauthenticated {
		t.Fatalf("want UNAUTHENTICATED, got %v", err)
	}
}

func TestAnotherNamespaceCannotSeeTheJob(t *testing.T) {
	c := dial(t, env(t, "KAIROS_TOKEN"))
	other := dial(t, env(t, "KAIROS_OTHER_TOKEN"))
	job := must(c.CreateJob(ctx, kairos.NewJob{Task: "sleep", RunAt: at(time.Now().Add(time.Hour)), Payload: map[string]any{"seconds": 0}}))(t).Job
	if _, err := other.GetJob(ctx, job.JobID); kairos.ReasonOf(err) != kairos.ReasonJobNotFound {
		t.Fatalf("another namespace must see no such job, got %v", err)
	}
	if err := other.CancelJob(ctx, job.JobID); kairos.ReasonOf(err) != kairos.ReasonJobNotFound {
		t.Fatalf("another namespace must not cancel it, got %v", err)
	}
	if state := must(c.GetJob(ctx, job.JobID))(t).State; state != "DUE" {
		t.Fatalf("want DUE, got %s", state)
	}
	_ = c.CancelJob(ctx, job.JobID)
}

func TestMutualTLS(t *testing.T) {
	roots := x509.NewCertPool()
	ca, err := os.ReadFile(env(t, "KAIROS_TLS_CA"))
	if err != nil || !roots.AppendCertsFromPEM(ca) {
		t.Fatalf("reading the CA: %v", err)
	}
	pair, err := tls.LoadX509KeyPair(env(t, "KAIROS_TLS_CLIENT_CERT"), env(t, "KAIROS_TLS_CLIENT_KEY"))
	if err != nil {
		t.Fatal(err)
	}
	secure, err := kairos.Dial(kairos.Options{
		Address: env(t, "KAIROS_TLS_COORDINATOR"),
		Token:   env(t, "KAIROS_TOKEN"),
		TLS:     &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}},
		Timeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer secure.Close()
	job := must(secure.CreateJob(ctx, kairos.NewJob{Task: "sleep", RunAt: at(time.Now().Add(time.Hour)), Payload: map[string]any{"seconds": 0}}))(t).Job
	if state := must(secure.GetJob(ctx, job.JobID))(t).State; state != "DUE" {
		t.Fatalf("want DUE, got %s", state)
	}
	// Without a client certificate the handshake fails: no call reaches the coordinator.
	anonymous, err := kairos.Dial(kairos.Options{Address: env(t, "KAIROS_TLS_COORDINATOR"), Token: env(t, "KAIROS_TOKEN"), TLS: &tls.Config{RootCAs: roots}, Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer anonymous.Close()
	if _, err := anonymous.GetJob(ctx, job.JobID); kairosError(t, err).Code != codes.Unavailable {
		t.Fatalf("want Unavailable without a client certificate, got %v", err)
	}
	if err := secure.CancelJob(ctx, job.JobID); err != nil {
		t.Fatal(err)
	}
}
