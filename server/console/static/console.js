// logbook console: the only script. It runs "verify now" on the ledger page
// and writes everything it shows with textContent, never as HTML.
"use strict";

(function () {
  const button = document.getElementById("verify");
  if (!button) {
    return;
  }
  const bar = document.getElementById("verify-progress");
  const status = document.getElementById("verify-status");
  const report = document.getElementById("verify-report");
  const phases = { 1: "chain, Merkle tree and refold of the projections", 2: "projections compared with the refold" };

  function fact(name, value) {
    const dt = document.createElement("dt");
    dt.textContent = name;
    const dd = document.createElement("dd");
    dd.textContent = value;
    report.append(dt, dd);
  }

  function finish(text, cls) {
    status.textContent = text;
    status.className = cls;
    button.disabled = false;
  }

  button.addEventListener("click", function () {
    button.disabled = true;
    report.hidden = true;
    report.replaceChildren();
    bar.hidden = false;
    bar.value = 0;
    status.className = "note";
    status.textContent = "Verifying…";
    const events = new EventSource("/ledger/verify");
    events.addEventListener("progress", function (e) {
      const p = JSON.parse(e.data);
      bar.value = p.total > 0 ? (100 * p.done) / p.total : 100;
      status.textContent = "Phase " + p.phase + " of 2 (" + (phases[p.phase] || "") + "): " + Math.floor(bar.value) + "%";
    });
    events.addEventListener("report", function (e) {
      events.close();
      const r = JSON.parse(e.data);
      bar.value = 100;
      report.hidden = false;
      fact("Events", String(r.size));
      fact("Head", r.head);
      if (r.root) fact("Root", r.root); // absent when the chain failed before it was computed
      fact("Merkle nodes re-hashed", String(r.nodes));
      if (r.projections) {
        fact("Projections", r.projections.checked
          ? "match a refold of the log (" + r.projections.compared_keys + " keys, fingerprint " + r.projections.fingerprint + ")"
          : "not compared: " + r.projections.note);
      }
      if (r.ok) {
        finish("OK: every hash, link and node holds.", "ok");
      } else {
        const p = r.error || {};
        finish("FAIL at seq " + p.seq + ": " + p.problem + (p.detail ? " (" + p.detail + ")" : ""), "fail");
      }
    });
    events.addEventListener("failure", function (e) {
      events.close();
      bar.hidden = true;
      finish(JSON.parse(e.data).error, "fail");
    });
    events.onerror = function () {
      if (events.readyState !== EventSource.CLOSED) {
        events.close();
        bar.hidden = true;
        finish("The connection to the server was lost.", "fail");
      }
    };
  });
})();
