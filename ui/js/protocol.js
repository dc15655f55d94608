// The names the backend and this UI share, generated from the Rust that defines them by
// tests/protocol_js.rs: `CODEWRIGHT_WRITE_PROTOCOL_JS=1 cargo test --test protocol_js`
// writes it again. Do not edit it by hand.

/** Every command a window may call (its capability grants some of them). */
export const COMMANDS = Object.freeze([
  'add_mcp_server',
  'add_project',
  'add_rule',
  'answer_question',
  'app_info',
  'app_settings',
  'attach_file',
  'check_mcp_server',
  'choose_agent',
  'close_window',
  'compact_task',
  'create_task',
  'decide_approval',
  'delete_task',
  'find_files',
  'find_tasks',
  'get_task',
  'implement_task_file',
  'import_mcp_servers',
  'list_folder',
  'list_projects',
  'list_tasks',
  'local_servers',
  'mcp_servers',
  'model_catalog',
  'new_sibling_task',
  'older_messages',
  'open_file',
  'open_link',
  'open_task',
  'pick_folder',
  'pick_mcp_config',
  'project_rules',
  'project_settings',
  'project_trust',
  'rank_skill',
  'remove_mcp_server',
  'remove_model',
  'remove_project',
  'remove_provider',
  'remove_provider_key',
  'remove_rule',
  'rename_project',
  'rename_task',
  'render_markdown',
  'restore_checkpoint',
  'save_app_settings',
  'save_memory',
  'save_model',
  'save_project_settings',
  'save_provider',
  'search_conversations',
  'send_message',
  'set_mcp_call_timeout',
  'set_mcp_server_enabled',
  'set_model_role',
  'set_project_trusted',
  'set_provider_key',
  'set_task_options',
  'settings_overview',
  'spare_ready',
  'stop_task',
  'sub_agent_work',
  'switch_skill',
  'task_agents',
  'task_commands',
  'task_files',
  'task_mcp_servers',
  'task_memory',
  'task_skills',
  'task_view',
  'tasks_needing_you',
  'test_model',
  'watch_tree',
]);

/** Every event the backend sends to windows. */
export const EVENTS = Object.freeze([
  'store',
  'agent',
  'reveal',
  'tree',
  'attach',
  'adopt',
]);

/** Where a task stands: stored, sent and shown in these words. */
export const TASK_STATUSES = Object.freeze([
  'idle',
  'queued',
  'running',
  'awaitingApproval',
  'paused',
  'done',
  'failed',
  'interrupted',
]);

/** The statuses of a task whose run is going in some window or process. */
export const LIVE_STATUSES = Object.freeze([
  'queued',
  'running',
  'awaitingApproval',
]);

/** Where a running agent is (`agent` events' `state`). */
export const AGENT_STATES = Object.freeze([
  'queued',
  'startingServers',
  'streaming',
  'awaitingApproval',
  'runningTools',
  'compacting',
  'idle',
]);

/** How a run ended. */
export const RUN_OUTCOMES = Object.freeze([
  'done',
  'stopped',
  'paused',
  'failed',
]);

/** The `kind` of every error a command or a run reports. */
export const ERROR_KINDS = Object.freeze([
  'auth',
  'missingKey',
  'noModel',
  'unknownModel',
  'rateLimit',
  'overloaded',
  'contextOverflow',
  'invalidRequest',
  'notFound',
  'network',
  'timeout',
  'badResponse',
  'streamEndedEarly',
  'provider',
  'busy',
  'notRunning',
  'alreadyAnswered',
  'notOffered',
  'badInput',
  'checkpoint',
  'compaction',
  'store',
  'setup',
  'dataDir',
  'corrupt',
  'tooNew',
  'badPath',
  'alreadyAdded',
  'denied',
  'window',
]);

/** The `type` of an `agent` event. */
export const AGENT_EVENT_TYPES = Object.freeze([
  'runStarted',
  'promptRead',
  'state',
  'request',
  'answerStarted',
  'textDelta',
  'thinkingDelta',
  'toolCallStarted',
  'toolCallArguments',
  'toolRunning',
  'approvalRequested',
  'approvalResolved',
  'questionAsked',
  'questionAnswered',
  'toolProgress',
  'toolFinished',
  'usage',
  'compaction',
  'notice',
  'error',
  'runFinished',
]);

/** The `type` of a `store` event. */
export const STORE_EVENT_TYPES = Object.freeze([
  'projectUpserted',
  'projectDeleted',
  'taskUpserted',
  'taskDeleted',
  'messageUpserted',
  'resync',
]);
