package metrics

// Every metric family the binaries register, by the process that
// registers it. The metrics table of docs/operations.md lists the same names (a test
// keeps them in step).
const (
	// Bus workers (every binary): internal/bus.
	BusMessagesTotal = "autocoder_bus_messages_total" // {consumer, outcome}
	BusHandleSeconds = "autocoder_bus_handle_seconds" // {consumer}
	BusInFlight      = "autocoder_bus_in_flight"      // {consumer}

	// Queues, read from JetStream consumer info at scrape time (coordinator).
	QueuePendingMessages    = "autocoder_queue_pending_messages"     // {pool}: waiting for a worker
	QueueInProgressMessages = "autocoder_queue_in_progress_messages" // {pool}: delivered, not yet acknowledged
	QueueOldestPendingAge   = "autocoder_queue_oldest_pending_age_seconds"
	// Pools, from the workers' capacity beats and the pause switches
	// (coordinator): saturation is in-progress / capacity.
	PoolCapacitySlots = "autocoder_pool_capacity_slots" // {pool}: slots of the live workers
	PoolWorkers       = "autocoder_pool_workers"        // {pool}: live worker processes
	PoolPaused        = "autocoder_pool_paused"         // {pool}: 1 while paused

	// Coordinator.
	CoordinatorStepsTotal          = "autocoder_coordinator_steps_total"           // {kind}
	CoordinatorCASConflictsTotal   = "autocoder_coordinator_cas_conflicts_total"   //
	CoordinatorResultsRefusedTotal = "autocoder_coordinator_results_refused_total" //
	CoordinatorResultsTakenTotal   = "autocoder_coordinator_results_taken_total"   // {copy}
	JobsRunning                    = "autocoder_jobs_running"                      //
	JobsFinishedTotal              = "autocoder_jobs_finished_total"               // {status, outcome}
	JobDurationSeconds             = "autocoder_job_duration_seconds"              //
	JobIterations                  = "autocoder_job_iterations"                    //
	StagesDispatchedTotal          = "autocoder_stages_dispatched_total"           // {stage}
	StageDeadlinesMissedTotal      = "autocoder_stage_deadlines_missed_total"      // {stage}

	// Stage workers: internal/stagework.
	StageResultsTotal           = "autocoder_stage_results_total"            // {stage, cached, outcome}
	StageDurationSeconds        = "autocoder_stage_duration_seconds"         // {stage, cached}
	StageCommandsRefusedTotal   = "autocoder_stage_commands_refused_total"   // {stage, reason}
	CacheLookupsTotal           = "autocoder_cache_lookups_total"            // {layer, result}
	CacheSignatureFailuresTotal = "autocoder_cache_signature_failures_total" // {reason}

	// LLM workers: the model client.
	ModelCallsTotal  = "autocoder_model_calls_total"           // {model, stage, outcome}
	ModelCallSeconds = "autocoder_model_call_duration_seconds" // {model, stage}
	ModelTokensTotal = "autocoder_model_tokens_total"          // {model, stage, direction}
	ModelErrorsTotal = "autocoder_model_errors_total"          // {model, stage, kind}
	// ModelCostTotal is in the model table's currency (docs/settings.md).
	ModelCostTotal = "autocoder_model_cost_total" // {model, stage}

	// Sandbox workers: the backend.
	SandboxRunsTotal    = "autocoder_sandbox_runs_total"             // {backend, outcome}
	SandboxRunSeconds   = "autocoder_sandbox_run_duration_seconds"   // {backend}
	SandboxBuildsTotal  = "autocoder_sandbox_builds_total"           // {backend, outcome}
	SandboxBuildSeconds = "autocoder_sandbox_build_duration_seconds" // {backend}
	// SandboxWarmFallbacksTotal counts warm runs that fell back to a cold
	// one (docs/sandbox.md): the warm runner was dead, wedged or broke its
	// protocol.
	SandboxWarmFallbacksTotal = "autocoder_sandbox_warm_fallbacks_total" // {backend, reason}
)
