// Package webui is the web view of skewlens: one HTML page, its script
// and its style sheet, embedded in the binary. The page reads the same
// JSON API as any other client (GET /v1/incidents, /v1/stats,
// /v1/findings and /v1/salting), so the API stays the contract, and draws
// per job its incidents and their timeline, a heat map of subtasks ×
// windows per task for busy time with back-pressure apart (the hot
// subtask and its cause marked), the hot keys over time and the current
// salting plan. It needs no build step and loads nothing from elsewhere.
//
// # Safety
//
// Every name that comes from the API reaches the page through the DOM as
// text (textContent, setAttribute), never as markup, and the handler
// sends a Content-Security-Policy that allows only the page's own script
// and style (no inline script, no other origin), so a job, task or key
// named "<script>…" shows as itself.
//
// # Blocking and concurrency
//
// Handler is safe for concurrent use; it holds no state but the embedded
// files and never blocks.
package webui
