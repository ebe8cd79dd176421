// The autocoder web UI: a job list (#/) and a job page (#/jobs/<id>),
// as plain ES modules with no build step.
import { $, api, useToken } from "./dom.js";
import { showList, stopList } from "./list.js";
import { showJob, stopJob } from "./job.js";

function route() {
  stopList();
  stopJob();
  const hash = location.hash;
  let m = hash.match(/^#\/jobs\/([A-Za-z0-9_-]+)$/);
  if (!m) m = hash.match(/^#(job-[A-Za-z0-9_-]+)$/); // the links of the first UI
  if (m) showJob(m[1]);
  else showList(new URLSearchParams(hash.replace(/^#\/?\??/, "")));
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
