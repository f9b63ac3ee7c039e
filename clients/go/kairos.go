// Package kairos is a small, typed layer over the generated kairos.v1 gRPC
// stubs (package kairosv1, in gen/kairos/v1) for the Kairos job scheduler.
//
// Values look like the REST API's JSON: states are "DUE", "CLAIMED"...,
// policies "fire-once", "skip"..., and a field with no value is the zero
// value with a Has/nil marker where it matters (RunAt, Schedule).
//
// Every failed call returns an *Error carrying the coordinator's stable
// Reason, the Field at fault (a proto field path) and, for a claimed job,
// the run, agent and fencing token (Claim). Branch with errors.As.
package kairos

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	kairosv1 "kairos.dev/client/gen/kairos/v1"
)

// Options configure a Client. Address defaults to KAIROS_COORDINATOR (else
// localhost:50051) and Token to KAIROS_TOKEN.
type Options struct {
	Address string
	Token   string
	// TLS, when set, connects with it (nil: plaintext).
	TLS *tls.Config
	// Timeout bounds each call (default 10 s).
	Timeout time.Duration
}

// Client talks to one coordinator's gRPC port. Safe for concurrent use.
type Client struct {
	conn    *grpc.ClientConn
	jobs    kairosv1.JobServiceClient
	token   string
	timeout time.Duration
}

// Dial connects (lazily: the first call opens the connection).
func Dial(options Options) (*Client, error) {
	address := firstOf(options.Address, os.Getenv("KAIROS_COORDINATOR"), "localhost:50051")
	token := options.Token
	if token == "" {
		token = os.Getenv("KAIROS_TOKEN")
	}
	creds := insecure.NewCredentials()
	if options.TLS != nil {
		creds = credentials.NewTLS(options.TLS)
	}
	conn, err := grpc.NewClient(address, grpc.WithTransportCredentials(creds))
	if err != nil {
		return nil, fmt.Errorf("kairos: connect to %s: %w", address, err)
	}
	timeout := options.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	return &Client{conn: conn, jobs: kairosv1.NewJobServiceClient(conn), token: token, timeout: timeout}, nil
}

// Close closes the connection.
func (c *Client) Close() error { return c.conn.Close() }

// Raw is the generated JobService client, for calls this layer does not wrap.
func (c *Client) Raw() kairosv1.JobServiceClient { return c.jobs }

func (c *Client) ctx(parent context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithTimeout(parent, c.timeout)
	if c.token != "" {
		ctx = metadata.AppendToOutgoingContext(ctx, "authorization", "Bearer "+c.token)
	}
	return ctx, cancel
}

// Job is a job as the coordinator sees it (REST: GET /jobs/{id}).
type Job struct {
	JobID     string
	Namespace string
	Name      string
	Task      string
	// Schedule is the cron expression of a recurring job; "" for a one-off job.
	Schedule string
	// RunAt is when a one-off job is due; nil for a recurring job.
	RunAt          *time.Time
	Timezone       string
	Payload        map[string]any
	State          string
	NextRunAt      *time.Time
	Attempt        uint32
	MaxAttempts    uint32
	TimeoutSeconds uint32
	MisfirePolicy  string
	OverlapPolicy  string
	IdempotencyKey string
	// LeaseGeneration is the fencing token of the latest claim.
	LeaseGeneration uint64
	// LeaseOwner is the agent holding the lease (CLAIMED); "" otherwise.
	LeaseOwner string
	// OccurrenceAt is the schedule occurrence the pending or running attempt serves.
	OccurrenceAt *time.Time
	Version      uint32
	CreatedAt    time.Time
	UpdatedAt    time.Time
}

// Run is one attempt of a job, or one skipped occurrence.
type Run struct {
	RunID           string
	JobID           string
	Attempt         uint32
	LeaseGeneration uint64
	ScheduledFor    time.Time
	StartedAt       *time.Time
	FinishedAt      *time.Time
	Outcome         string
	WorkerID        string
	Error           string
	AbortedBy       string
	Reason          string
}

func instant(ts *timestamppb.Timestamp) *time.Time {
	if ts == nil {
		return nil
	}
	t := ts.AsTime()
	return &t
}

func enumText(name string, prefix string, dashed bool) string {
	text := strings.TrimPrefix(name, prefix)
	if dashed {
		return strings.ReplaceAll(strings.ToLower(text), "_", "-")
	}
	return text
}

func jobFrom(j *kairosv1.Job) Job {
	job := Job{
		JobID:           j.GetId(),
		Namespace:       j.GetNamespace(),
		Name:            j.GetName(),
		Task:            j.GetTask(),
		Schedule:        j.GetSchedule(),
		RunAt:           instant(j.GetRunAt()),
		Timezone:        firstOf(j.GetTimezone(), "UTC"),
		Payload:         j.GetPayload().AsMap(),
		State:           enumText(j.GetState().String(), "JOB_STATE_", false),
		NextRunAt:       instant(j.GetNextRunAt()),
		Attempt:         j.GetAttempt(),
		MaxAttempts:     j.GetMaxAttempts(),
		TimeoutSeconds:  j.GetTimeoutSeconds(),
		MisfirePolicy:   enumText(j.GetMisfirePolicy().String(), "MISFIRE_POLICY_", true),
		OverlapPolicy:   enumText(j.GetOverlapPolicy().String(), "OVERLAP_POLICY_", true),
		IdempotencyKey:  j.GetIdempotencyKey(),
		LeaseGeneration: j.GetLeaseGeneration(),
		LeaseOwner:      j.GetLeaseOwner(),
		OccurrenceAt:    instant(j.GetOccurrenceAt()),
		Version:         j.GetVersion(),
		CreatedAt:       j.GetCreatedAt().AsTime(),
		UpdatedAt:       j.GetUpdatedAt().AsTime(),
	}
	if job.Payload == nil {
		job.Payload = map[string]any{}
	}
	return job
}

func runFrom(r *kairosv1.Run) Run {
	return Run{
		RunID:           r.GetRunId(),
		JobID:           r.GetJobId(),
		Attempt:         r.GetAttempt(),
		LeaseGeneration: r.GetLeaseGeneration(),
		ScheduledFor:    r.GetScheduledFor().AsTime(),
		StartedAt:       instant(r.GetStartedAt()),
		FinishedAt:      instant(r.GetFinishedAt()),
		Outcome:         enumText(r.GetOutcome().String(), "RUN_OUTCOME_", false),
		WorkerID:        r.GetWorkerId(),
		Error:           r.GetError(),
		AbortedBy:       r.GetAbortedBy(),
		Reason:          r.GetReason(),
	}
}

// NewJob describes a job to create: exactly one of RunAt and Schedule.
type NewJob struct {
	Task           string
	RunAt          *time.Time
	Schedule       string
	Timezone       string
	Payload        map[string]any
	Name           string
	MaxAttempts    uint32
	TimeoutSeconds uint32
	// MisfirePolicy is "fire-once" (default), "skip" or "catch-up".
	MisfirePolicy  string
	IdempotencyKey string
}

// Created is the answer to CreateJob: Created is false for an idempotent repeat.
type Created struct {
	Job     Job
	Created bool
}

// CreateJob creates a one-off job (RunAt) or a recurring one (Schedule).
func (c *Client) CreateJob(ctx context.Context, job NewJob) (Created, error) {
	request, err := createRequest(job)
	if err != nil {
		return Created{}, err
	}
	callCtx, cancel := c.ctx(ctx)
	defer cancel()
	answer, err := c.jobs.CreateJob(callCtx, request)
	if err != nil {
		return Created{}, errorFrom(err)
	}
	return Created{Job: jobFrom(answer.GetJob()), Created: answer.GetCreated()}, nil
}

// MaxBatchJobs is the most jobs one CreateJobs call takes.
const MaxBatchJobs = 1000

// BatchResult is one job's answer from CreateJobs: the job made (Created) or
// found by its idempotency key, or Err (an *Error) when it was refused.
type BatchResult struct {
	JobID   string
	Created bool
	Err     error
}

// CreateJobs creates 1 to MaxBatchJobs jobs in one call and one transaction.
// Each job is answered on its own, in order: a refused job carries the error
// CreateJob would have returned for it and does not stop the others. The
// returned error is for the call as a whole (size, credentials, transport).
func (c *Client) CreateJobs(ctx context.Context, jobs []NewJob) ([]BatchResult, error) {
	if len(jobs) == 0 || len(jobs) > MaxBatchJobs {
		return nil, invalidArg("jobs", fmt.Sprintf("CreateJobs takes 1 to %d jobs", MaxBatchJobs))
	}
	results := make([]BatchResult, len(jobs))
	request := &kairosv1.CreateJobsRequest{}
	var sent []int
	for i, job := range jobs {
		item, err := createRequest(job)
		if err != nil {
			results[i] = BatchResult{Err: err}
			continue
		}
		request.Jobs = append(request.Jobs, item)
		sent = append(sent, i)
	}
	if len(sent) == 0 {
		return results, nil
	}
	callCtx, cancel := c.ctx(ctx)
	defer cancel()
	answer, err := c.jobs.CreateJobs(callCtx, request)
	if err != nil {
		return nil, errorFrom(err)
	}
	if len(answer.GetResults()) != len(sent) {
		return nil, &Error{Code: codes.Internal, Message: fmt.Sprintf("CreateJobs: %d results for %d jobs", len(answer.GetResults()), len(sent))}
	}
	for position, result := range answer.GetResults() {
		if result.GetError() != nil {
			results[sent[position]] = BatchResult{Err: errorOf(status.FromProto(result.GetError()))}
		} else {
			results[sent[position]] = BatchResult{JobID: result.GetJobId(), Created: result.GetCreated()}
		}
	}
	return results, nil
}

// createRequest is the CreateJobRequest of a NewJob; an *Error names the field it cannot send.
func createRequest(job NewJob) (*kairosv1.CreateJobRequest, error) {
	request := &kairosv1.CreateJobRequest{
		Task:           job.Task,
		Timezone:       job.Timezone,
		Name:           job.Name,
		MaxAttempts:    job.MaxAttempts,
		TimeoutSeconds: job.TimeoutSeconds,
		IdempotencyKey: job.IdempotencyKey,
	}
	if job.RunAt != nil {
		request.When = &kairosv1.CreateJobRequest_RunAt{RunAt: timestamppb.New(*job.RunAt)}
	} else if job.Schedule != "" {
		request.When = &kairosv1.CreateJobRequest_Schedule{Schedule: job.Schedule}
	}
	if job.Payload != nil {
		payload, err := structpb.NewStruct(job.Payload)
		if err != nil {
			return nil, invalidArg("payload", "payload: "+err.Error())
		}
		request.Payload = payload
	}
	if job.MisfirePolicy != "" {
		value, ok := kairosv1.MisfirePolicy_value["MISFIRE_POLICY_"+strings.ToUpper(strings.ReplaceAll(job.MisfirePolicy, "-", "_"))]
		if !ok {
			return nil, invalidArg("misfire_policy", "misfire_policy must be fire-once, skip or catch-up")
		}
		request.MisfirePolicy = kairosv1.MisfirePolicy(value)
	}
	return request, nil
}

// GetJob reads a job.
func (c *Client) GetJob(ctx context.Context, jobID string) (Job, error) {
	callCtx, cancel := c.ctx(ctx)
	defer cancel()
	answer, err := c.jobs.GetJob(callCtx, &kairosv1.GetJobRequest{JobId: jobID})
	if err != nil {
		return Job{}, errorFrom(err)
	}
	return jobFrom(answer.GetJob()), nil
}

// JobFilter narrows ListJobs; zero values mean "any".
type JobFilter struct {
	State string
	Task  string
	// Name keeps the jobs whose name starts with it.
	Name string
	// Limit is the page size, 1 to 1000 (0: 100).
	Limit  uint32
	Cursor string
}

// ListJobsPage returns one page and the cursor of the next ("" on the last page).
func (c *Client) ListJobsPage(ctx context.Context, filter JobFilter) ([]Job, string, error) {
	request := &kairosv1.ListJobsRequest{Task: filter.Task, Name: filter.Name, Limit: filter.Limit, Cursor: filter.Cursor}
	if filter.State != "" {
		value, ok := kairosv1.JobState_value["JOB_STATE_"+strings.ToUpper(filter.State)]
		if !ok {
			return nil, "", invalidArg("state", "state must be DUE, CLAIMED, COMPLETED, DEAD, PAUSED or CANCELLED")
		}
		request.State = kairosv1.JobState(value)
	}
	callCtx, cancel := c.ctx(ctx)
	defer cancel()
	answer, err := c.jobs.ListJobs(callCtx, request)
	if err != nil {
		return nil, "", errorFrom(err)
	}
	jobs := make([]Job, 0, len(answer.GetJobs()))
	for _, job := range answer.GetJobs() {
		jobs = append(jobs, jobFrom(job))
	}
	return jobs, answer.GetNextCursor(), nil
}

// Jobs walks every job matching filter, a page at a time: for each job, yield
// is called; return false to stop. It returns the first error.
func (c *Client) Jobs(ctx context.Context, filter JobFilter, yield func(Job) bool) error {
	for {
		jobs, next, err := c.ListJobsPage(ctx, filter)
		if err != nil {
			return err
		}
		for _, job := range jobs {
			if !yield(job) {
				return nil
			}
		}
		if next == "" {
			return nil
		}
		filter.Cursor = next
	}
}

// CancelJob cancels a job that has not started. Once an agent holds it, the
// error is an *Error with Reason "JOB_CLAIMED" and Claim set: use AbortRun.
func (c *Client) CancelJob(ctx context.Context, jobID string) error {
	callCtx, cancel := c.ctx(ctx)
	defer cancel()
	_, err := c.jobs.CancelJob(callCtx, &kairosv1.CancelJobRequest{JobId: jobID})
	return errorFrom(err)
}

// Abort is the answer to AbortRun: the run being stopped and the agent asked to stop it.
type Abort struct {
	RunID           string
	AgentID         string
	LeaseGeneration uint64
	StopSchedule    bool
}

// AbortRun stops the running run (it ends CANCELLED); a recurring job goes on
// to its next occurrence unless stopSchedule.
func (c *Client) AbortRun(ctx context.Context, jobID string, stopSchedule bool) (Abort, error) {
	callCtx, cancel := c.ctx(ctx)
	defer cancel()
	answer, err := c.jobs.AbortRun(callCtx, &kairosv1.AbortRunRequest{JobId: jobID, StopSchedule: stopSchedule})
	if err != nil {
		return Abort{}, errorFrom(err)
	}
	return Abort{RunID: answer.GetRunId(), AgentID: answer.GetAgentId(), LeaseGeneration: answer.GetLeaseGeneration(), StopSchedule: answer.GetStopSchedule()}, nil
}

// ListRunsPage returns one page of a job's runs, oldest first, and the next cursor ("" on the last page).
func (c *Client) ListRunsPage(ctx context.Context, jobID string, limit uint32, cursor string) ([]Run, string, error) {
	callCtx, cancel := c.ctx(ctx)
	defer cancel()
	answer, err := c.jobs.ListRuns(callCtx, &kairosv1.ListRunsRequest{JobId: jobID, Limit: limit, Cursor: cursor})
	if err != nil {
		return nil, "", errorFrom(err)
	}
	runs := make([]Run, 0, len(answer.GetRuns()))
	for _, run := range answer.GetRuns() {
		runs = append(runs, runFrom(run))
	}
	return runs, answer.GetNextCursor(), nil
}

// Runs returns every run of a job, oldest first, fetching a page at a time.
func (c *Client) Runs(ctx context.Context, jobID string) ([]Run, error) {
	var all []Run
	cursor := ""
	for {
		runs, next, err := c.ListRunsPage(ctx, jobID, 0, cursor)
		if err != nil {
			return nil, err
		}
		all = append(all, runs...)
		if next == "" {
			return all, nil
		}
		cursor = next
	}
}

// Claim says who holds a claimed job.
type Claim struct {
	RunID   string
	AgentID string
	// LeaseGeneration is the fencing token of the run in progress.
	LeaseGeneration uint64
	LeaseUntil      *time.Time
}

// Error is a refused call, read from the google.rpc.Status the coordinator sends.
type Error struct {
	Code codes.Code
	// Reason is the stable UPPER_SNAKE_CASE reason to branch on (JOB_CLAIMED,
	// JOB_NOT_FOUND, INVALID_ARGUMENT...); "" when the coordinator was never reached.
	Reason string
	// Field is the request field at fault, a proto field path ("max_attempts", "payload.seconds").
	Field   string
	Message string
	// Metadata holds the facts the coordinator attached (ErrorInfo metadata).
	Metadata map[string]string
	// Claim is set for Reason "JOB_CLAIMED".
	Claim *Claim
}

func (e *Error) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("kairos: %s (%s, field %s): %s", e.Code, e.Reason, e.Field, e.Message)
	}
	return fmt.Sprintf("kairos: %s (%s): %s", e.Code, e.Reason, e.Message)
}

// Reasons callers branch on most.
const (
	ReasonJobClaimed           = "JOB_CLAIMED"
	ReasonJobNotFound          = "JOB_NOT_FOUND"
	ReasonInvalidArgument      = "INVALID_ARGUMENT"
	ReasonIdempotencyKeyReused = "IDEMPOTENCY_KEY_REUSED"
	ReasonUnauthenticated      = "UNAUTHENTICATED"
)

// invalidArg is the error for input refused before anything is sent.
func invalidArg(field, message string) *Error {
	return &Error{Code: codes.InvalidArgument, Reason: ReasonInvalidArgument, Field: field, Message: message}
}

// ReasonOf is the Reason of a Kairos error ("" for any other error or nil).
func ReasonOf(err error) string {
	var kairosErr *Error
	if errors.As(err, &kairosErr) {
		return kairosErr.Reason
	}
	return ""
}

func errorFrom(err error) error {
	if err == nil {
		return nil
	}
	st, ok := status.FromError(err)
	if !ok {
		return err
	}
	return errorOf(st)
}

// errorOf reads a google.rpc.Status: a failed call's, or a refused CreateJobs item's.
func errorOf(st *status.Status) *Error {
	out := &Error{Code: st.Code(), Message: st.Message(), Metadata: map[string]string{}}
	for _, detail := range st.Details() {
		switch d := detail.(type) {
		case *errdetails.ErrorInfo:
			out.Reason = d.GetReason()
			for key, value := range d.GetMetadata() {
				out.Metadata[key] = value
			}
		case *errdetails.BadRequest:
			if violations := d.GetFieldViolations(); len(violations) > 0 {
				out.Field = violations[0].GetField()
			}
		case *kairosv1.ClaimedJob:
			out.Claim = &Claim{RunID: d.GetRunId(), AgentID: d.GetAgentId(), LeaseGeneration: d.GetLeaseGeneration(), LeaseUntil: instant(d.GetLeaseUntil())}
		}
	}
	return out
}

func firstOf(values ...string) string {
	for _, value := range values {
		if value != "" {
			return value
		}
	}
	return ""
}
