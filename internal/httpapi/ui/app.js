// The autocoder web UI: a job list (#/), a job page (#/jobs/<id>), the
// launch form (#/new) and the queues and workers (#/queues), as plain ES
// modules with no build step.
import { $, api, useToken } from "./dom.js";
import { showList, stopList } from "./list.js";
import { showJob, stopJob } from "./job.js";
import { showLaunch, stopLaunch } from "./launch.js";
import { showQueues, stopQueues } from "./queues.js";

function route() {
  stopList();
  stopJob();
  stopLaunch();
  stopQueues();
  const hash = location.hash;
  const [where, query] = hash.split("?");
  const params = new URLSearchParams(query || "");
  for (const a of document.querySelectorAll("nav a")) a.classList.toggle("on", a.getAttribute("href") === (where === "#/jobs" || where.startsWith("#/jobs/") ? "#/" : where || "#/"));
  let m = hash.match(/^#\/jobs\/([A-Za-z0-9_-]+)$/);
  if (!m) m = hash.match(/^#(job-[A-Za-z0-9_-]+)$/); // the links of the first UI
  if (m) showJob(m[1]);
  else if (where === "#/new") showLaunch(params);
  else if (where === "#/queues") showQueues();
  else showList(params);
}

$("auth").addEventListener("submit", (e) => {
  e.preventDefault();
  const token = $("token").value.trim();
  if (!token) return;
  $("token").value = "";
  useToken(token, route);
});

window.addEventListener("hashchange", route);
route();

// api is exported for the console: await autocoder.api("v1/summaries").
window.autocoder = { api };
