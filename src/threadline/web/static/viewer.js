// threadline viewer: the page's few behaviours, without a framework.
// - times shown in the reader's time zone;
// - older parts of a long conversation loaded on scroll (newer ones too, when opened at a search hit);
// - live updates: new messages, the streamed answer and the turn's state, from /c/<id>/events (server-sent events),
//   and the states of the conversation's durable turns (queued, running on a worker, done…);
// - the composer posts without leaving the page.
// Every HTML string inserted here was rendered (and escaped) by the server.
"use strict";

(function () {
  const localTime = new Intl.DateTimeFormat(undefined, { dateStyle: "medium", timeStyle: "short" });
  const exactTime = new Intl.DateTimeFormat(undefined, { dateStyle: "full", timeStyle: "long" });

  // Shown to the minute in the reader's time zone; to the second (and in UTC) on hover.
  function localizeTime(el) {
    const date = new Date(el.getAttribute("datetime"));
    if (!isNaN(date)) {
      const utc = el.title || el.textContent;
      el.title = `${exactTime.format(date)} (${utc})`;
      el.textContent = localTime.format(date);
    }
  }

  function localizeTimes(root) {
    for (const el of root.querySelectorAll("time[datetime]")) localizeTime(el);
  }

  function fragment(html) {
    const template = document.createElement("template");
    template.innerHTML = html;
    localizeTimes(template.content);
    return template.content;
  }

  localizeTimes(document);

  // -- the keyboard: "/" focuses the search, Escape leaves it (j and k are the timeline's, below) -------------------
  function typing(target) {
    return target instanceof Element && target.closest("input, textarea, select, [contenteditable]");
  }
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    if (event.key === "Escape" && event.target instanceof Element && event.target.matches("input[type=search]")) {
      event.target.blur();
      return;
    }
    if (event.key !== "/" || typing(event.target)) return;
    const search = document.querySelector("#find input[name=q], form.search input[name=q]");
    if (!search) return;
    event.preventDefault(); // the slash is a key, not text
    search.focus();
    search.select();
  });

  // -- copy buttons: a message's source, a call's arguments, a tool's output (the whole of it when the page cuts it) --
  async function toClipboard(text) {
    if (navigator.clipboard && window.isSecureContext) {
      await navigator.clipboard.writeText(text);
      return;
    }
    // Served over plain HTTP to another host (with a token), the Clipboard API is not available.
    const area = document.createElement("textarea");
    area.value = text;
    area.setAttribute("readonly", "");
    area.style.position = "fixed";
    area.style.opacity = "0";
    document.body.append(area);
    area.select();
    const copied = document.execCommand("copy");
    area.remove();
    if (!copied) throw new Error("the browser refused");
  }

  async function copiedText(button) {
    if (button.dataset.full) {
      const response = await fetch(button.dataset.full);
      if (!response.ok) throw new Error(response.statusText);
      return response.text();
    }
    if (button.dataset.copy === "message") {
      const message = button.closest(".msg");
      const source = message.querySelector("pre.raw") || message.querySelector(".text");
      return source ? source.textContent : "";
    }
    const body = button.closest(".tool-body");
    const part = body && body.querySelector(button.dataset.copy === "arguments" ? "pre.arguments" : "pre.output");
    return part ? part.textContent : "";
  }

  document.addEventListener("click", async (event) => {
    const button = event.target instanceof Element ? event.target.closest("button.copy") : null;
    if (!button) return;
    event.preventDefault();
    try {
      await toClipboard(await copiedText(button));
      button.textContent = "Copied";
    } catch (error) {
      button.textContent = "Copy failed";
    }
    setTimeout(() => { button.textContent = "Copy"; }, 1500);
  });

  const timeline = document.getElementById("timeline");
  if (!timeline) return;

  const cid = timeline.dataset.cid;
  const items = document.getElementById("items");
  const draft = document.getElementById("draft");
  const draftText = draft.querySelector(".text");
  const status = document.getElementById("turn-status");
  const liveState = document.getElementById("live-state");
  const composer = document.getElementById("composer");
  let firstSeq = timeline.dataset.firstSeq === "" ? null : Number(timeline.dataset.firstSeq);
  let lastSeq = Number(timeline.dataset.lastSeq);
  let hasOlder = timeline.dataset.hasOlder === "true";
  let atEnd = timeline.dataset.atEnd === "true";
  let loadingOlder = null; // the load of an older part under way: whoever asks for one meanwhile waits for it

  function nearBottom() {
    return window.innerHeight + window.scrollY >= document.body.scrollHeight - 160;
  }

  function scrollToBottom() {
    window.scrollTo(0, document.body.scrollHeight);
  }

  // -- older and newer parts ---------------------------------------------------------------------------------------
  const olderBox = timeline.querySelector(".older");

  function loadOlder() {
    if (loadingOlder) return loadingOlder;
    if (!hasOlder || firstSeq === null) return Promise.resolve();
    loadingOlder = readOlder().finally(() => { loadingOlder = null; });
    return loadingOlder;
  }

  async function readOlder() {
    try {
      const response = await fetch(`/c/${encodeURIComponent(cid)}/messages?before=${firstSeq}`, {
        headers: { Accept: "application/json" },
      });
      if (!response.ok) throw new Error(response.statusText);
      const part = await response.json();
      // Keep what the reader was looking at in place: measure where the first item sits before and after the
      // older part goes in above it. (Not by the page's height: Chromium anchors the scroll position itself, so
      // adding the height again would throw the reader down by a whole part.)
      const anchor = items.firstElementChild;
      const top = anchor ? anchor.getBoundingClientRect().top : 0;
      items.prepend(fragment(part.html));
      applyFilters();
      renderTimings();
      applyTurnBadges();
      if (anchor) window.scrollBy(0, anchor.getBoundingClientRect().top - top);
      firstSeq = part.first_seq === null ? firstSeq : part.first_seq;
      hasOlder = part.has_older;
      if (!hasOlder) olderBox.innerHTML = '<p class="muted start">Start of the conversation</p>';
    } catch (error) {
      olderBox.textContent = "Could not load older messages: " + error.message;
    }
  }

  if (olderBox) {
    const link = olderBox.querySelector(".load-older");
    if (link) {
      link.addEventListener("click", (event) => {
        event.preventDefault();
        loadOlder();
      });
    }
    new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) loadOlder();
    }, { rootMargin: "400px 0px 0px 0px" }).observe(olderBox);
  }

  const newerBox = timeline.querySelector(".newer");
  async function loadNewer() {
    const response = await fetch(`/c/${encodeURIComponent(cid)}/messages?after=${lastSeq}`, {
      headers: { Accept: "application/json" },
    });
    if (!response.ok) return;
    const part = await response.json();
    items.append(fragment(part.html));
    applyFilters();
    renderTimings();
    applyTurnBadges();
    if (part.last_seq !== null) lastSeq = part.last_seq;
    atEnd = part.at_end;
    if (atEnd) {
      newerBox.innerHTML = "";
      startLive();
    }
  }
  const newerLink = newerBox && newerBox.querySelector(".load-newer");
  let loadingNewer = false;
  async function loadNewerOnce() {
    if (atEnd || loadingNewer) return;
    loadingNewer = true;
    try {
      await loadNewer();
    } finally {
      loadingNewer = false;
    }
  }
  if (newerLink) {
    newerLink.addEventListener("click", (event) => {
      event.preventDefault();
      loadNewerOnce();
    });
    // Opened at the start or at a hit, the part after it loads as the reader scrolls down to it.
    new IntersectionObserver((entries) => {
      if (entries.some((entry) => entry.isIntersecting)) loadNewerOnce();
    }, { rootMargin: "0px 0px 400px 0px" }).observe(newerBox);
  }

  // -- durable turns: their states under the messages, and each one's badge on its request message ----------------
  // The strip comes rendered by the server (on the page, then as live "durable" events whenever a state changes);
  // its data-badges maps each request message's id to [state, words]. Badges of turns a later event does not
  // name (older than the server looks through) stay as they were.
  const turnBadges = new Map();

  function readTurnBadges(strip) {
    try {
      for (const [id, badge] of Object.entries(JSON.parse(strip.dataset.badges || "{}"))) turnBadges.set(id, badge);
    } catch (_) { /* not JSON: keep the badges shown */ }
  }

  function applyTurnBadges() {
    for (const [id, [state, words]] of turnBadges) {
      const message = document.getElementById("m-" + id);
      const head = message && message.querySelector(".msg-head");
      if (!head) continue;
      let badge = head.querySelector(".turn-badge");
      if (!badge) {
        badge = document.createElement("span");
        const who = head.querySelector(".who");
        if (who) who.after(badge);
        else head.prepend(badge);
      }
      badge.className = `badge turn-badge turn-${state}`;
      badge.title = "The state of the durable turn this message started";
      badge.textContent = "turn " + words;
    }
  }

  function showDurable(event) {
    const strip = document.getElementById("durable-turns");
    const fresh = fragment(JSON.parse(event.data).html).firstElementChild;
    if (!strip || !fresh) return;
    const follow = nearBottom();
    strip.replaceWith(fresh);
    readTurnBadges(fresh);
    applyTurnBadges();
    if (follow) scrollToBottom();
  }

  const durableStrip = document.getElementById("durable-turns");
  if (durableStrip) readTurnBadges(durableStrip);

  // -- live updates --------------------------------------------------------------------------------------------------
  function setStatus(text, bad) {
    status.textContent = text;
    status.classList.toggle("bad", Boolean(bad));
  }

  function addMessage(data) {
    const follow = nearBottom();
    if (data.role === "assistant" || data.role === "failure") {
      draft.hidden = true;
      draftText.textContent = "";
    }
    const group = data.call_id ? document.getElementById("call-" + data.call_id) : null;
    if (group && group.tagName === "DETAILS") {
      // A result whose call is on the page: complete that group.
      group.querySelector(".tool-body").replaceWith(fragment(data.body));
      group.querySelector(".tool-meta").replaceChildren(fragment(data.status));
      for (const name of [...group.classList]) if (name.startsWith("state-")) group.classList.remove(name);
      group.classList.add("state-" + data.state);
      if (data.state === "awaiting") group.open = true; // its buttons in sight
      if (data.ms !== null && data.ms !== undefined) group.dataset.ms = data.ms;
      if (data.result_id) group.dataset.resultId = data.result_id;
      const owner = group.closest(".msg");
      if (owner && data.at) owner.dataset.end = String(Math.max(Number(owner.dataset.end || 0), Number(data.at)));
      const slot = group.nextElementSibling;
      if (slot && slot.classList.contains("page-slot")) slot.replaceChildren(fragment(data.page));
    } else if (!document.getElementById("m-" + data.id)) {
      items.append(fragment(data.html));
      const empty = timeline.querySelector(".empty");
      if (empty) empty.remove();
    }
    applyFilters();
    renderTimings();
    applyTurnBadges();
    refreshSpending();
    if (follow) scrollToBottom();
  }

  // The header's figures follow what arrives: how many messages, and when the last one came.
  const messageCount = document.getElementById("message-count");
  const updated = document.getElementById("updated");
  function updateHeader(count, when) {
    if (messageCount) messageCount.textContent = `${count.toLocaleString("en-US")} message${count === 1 ? "" : "s"}`;
    if (updated && when) {
      updated.setAttribute("datetime", when);
      updated.textContent = when.replace("T", " ").replace(/:\d\dZ$/, " UTC");
      updated.title = when.replace("T", " ").replace("Z", " UTC");
      localizeTime(updated);
    }
  }

  // A page opened away from the newest messages (at the start, at a search hit) does not show what arrives (the
  // messages between are not loaded; they come as the reader scrolls down), but its header still follows it.
  let watcher = null;
  function watchHeader() {
    watcher = new EventSource(`/c/${encodeURIComponent(cid)}/events?after=${Number(timeline.dataset.endSeq)}`);
    watcher.addEventListener("open", () => { liveState.textContent = "live"; });
    watcher.addEventListener("error", () => { liveState.textContent = "reconnecting…"; });
    watcher.addEventListener("message", (event) => {
      const data = JSON.parse(event.data);
      if (data.count !== undefined) updateHeader(data.count, data.updated);
    });
    watcher.addEventListener("durable", showDurable);
  }

  let source = null;
  function startLive() {
    if (source) return;
    if (watcher) {
      watcher.close();
      watcher = null;
    }
    source = new EventSource(`/c/${encodeURIComponent(cid)}/events?after=${lastSeq}`);
    source.addEventListener("open", () => { liveState.textContent = "live"; });
    source.addEventListener("error", () => { liveState.textContent = "reconnecting…"; });
    source.addEventListener("message", (event) => {
      const data = JSON.parse(event.data);
      if (data.seq > lastSeq) lastSeq = data.seq;
      addMessage(data);
      if (data.count !== undefined) updateHeader(data.count, data.updated);
    });
    source.addEventListener("durable", showDurable);
    source.addEventListener("delta", (event) => {
      const follow = nearBottom();
      draft.hidden = false;
      draftText.textContent += JSON.parse(event.data).text;
      if (follow) scrollToBottom();
    });
    source.addEventListener("turn", (event) => {
      const data = JSON.parse(event.data);
      const send = composer.querySelector("button[type=submit]");
      if (data.state === "running") {
        setStatus("The model is answering…");
        send.disabled = true;
        return;
      }
      send.disabled = false;
      draft.hidden = true;
      draftText.textContent = "";
      if (data.state === "done") setStatus("");
      else if (data.state === "awaiting") setStatus("A tool call waits for a decision or a result: see its group above.");
      else if (data.state === "failed") setStatus("The model call failed: " + data.detail, true);
      else if (data.state === "busy") setStatus("This conversation is busy elsewhere: " + data.detail, true);
      else setStatus("The turn stopped: " + data.detail, true);
    });
  }

  // -- the composer and the continue buttons --------------------------------------------------------------------------
  async function post(form) {
    const response = await fetch(form.action, {
      method: "POST",
      body: new FormData(form),
      headers: { Accept: "application/json" },
    });
    if (response.status === 202) return true;
    let detail = response.statusText;
    try {
      detail = (await response.json()).error || detail;
    } catch (_) { /* not JSON: keep the status text */ }
    setStatus(detail, true);
    return false;
  }

  composer.addEventListener("submit", async (event) => {
    event.preventDefault();
    const text = composer.querySelector("textarea");
    if (!text.value.trim()) return;
    if (await post(composer)) {
      text.value = "";
      setStatus("The model is answering…");
      scrollToBottom();
    }
  });
  composer.querySelector("textarea").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && (event.ctrlKey || event.metaKey)) {
      event.preventDefault();
      composer.requestSubmit();
    }
  });
  // -- j and k: the next and the previous message ---------------------------------------------------------------------
  function shownMessages() {
    return [...items.children].filter((el) => el.classList.contains("msg") && el.offsetParent !== null);
  }

  async function moveBy(step) {
    let list = shownMessages();
    if (!list.length) return;
    const current = items.querySelector(":scope > .msg.current");
    let index = current ? list.indexOf(current) : -1;
    if (index < 0) {
      // Start from what the reader sees: the first message on screen going down, the last one going up.
      const seen = list.filter((el) => {
        const box = el.getBoundingClientRect();
        return box.bottom > 90 && box.top < window.innerHeight - 140;
      });
      const start = step > 0 ? seen[0] : seen[seen.length - 1];
      index = start ? list.indexOf(start) : (step > 0 ? 0 : list.length - 1);
    } else if (index + step < 0 && (hasOlder || loadingOlder)) {
      await loadOlder();
      list = shownMessages();
      index = Math.max(0, list.indexOf(current) + step);
    } else {
      index = Math.min(list.length - 1, Math.max(0, index + step));
    }
    const next = list[Math.max(0, index)];
    if (current) current.classList.remove("current");
    next.classList.add("current");
    next.setAttribute("tabindex", "-1");
    next.focus({ preventScroll: true });
    next.scrollIntoView({ block: "center" });
  }

  // One move at a time, in the order of the presses: a press while an older part loads (for an earlier press, or
  // because the reader scrolled up) waits for it and then moves, so no press is lost however fast they come.
  let moves = Promise.resolve();
  document.addEventListener("keydown", (event) => {
    if (event.ctrlKey || event.metaKey || event.altKey || typing(event.target)) return;
    if (event.key === "j" || event.key === "k") {
      event.preventDefault();
      const step = event.key === "j" ? 1 : -1;
      moves = moves.then(() => moveBy(step)).catch(() => { /* a failed load says so above the list */ });
    }
  });

  // The raw toggle: a message's Markdown source instead of its rendering, and back.
  items.addEventListener("click", (event) => {
    const toggle = event.target.closest(".raw-toggle");
    if (!toggle) return;
    const message = toggle.closest(".msg");
    const raw = message.querySelector("pre.raw");
    const rendered = message.querySelector(".md");
    if (!raw || !rendered) return;
    const showRaw = raw.hidden;
    raw.hidden = !showRaw;
    rendered.hidden = showRaw;
    toggle.setAttribute("aria-pressed", String(showRaw));
    toggle.textContent = showRaw ? "Rendered" : "Raw";
  });

  // Deciding a call that waits (approve, deny, its outside result): the answer shows in the form; what the decision
  // records, and the turn that goes on, arrive as live updates.
  items.addEventListener("submit", async (event) => {
    const form = event.target;
    if (!form.classList.contains("decide-form")) return;
    event.preventDefault();
    const note = form.querySelector(".decide-status");
    const buttons = [...form.querySelectorAll("button")];
    buttons.forEach((button) => { button.disabled = true; });
    note.classList.remove("bad");
    note.textContent = "Recording…";
    const body = new FormData(form);
    const submitter = event.submitter;
    if (submitter && submitter.name) body.set(submitter.name, submitter.value);
    let answer = {};
    let response = null;
    try {
      // getAttribute: the buttons are named "action", which would shadow the form's own action property.
      response = await fetch(form.getAttribute("action"), {
        method: "POST",
        body,
        headers: { Accept: "application/json" },
      });
    } catch (error) {
      answer = { error: "The viewer did not answer: " + error.message };
    }
    if (response) {
      try {
        answer = await response.json();
      } catch (_) { /* not JSON (a refusal page): the status text says it */ }
    }
    if (response && response.status === 202) {
      note.textContent = answer.done;
      if (answer.resumed) setStatus("The model is answering…");
      return;
    }
    buttons.forEach((button) => { button.disabled = false; });
    note.textContent = answer.error || (response ? response.statusText : "Not recorded.");
    note.classList.add("bad");
  });

  items.addEventListener("submit", async (event) => {
    const form = event.target;
    if (!form.classList.contains("continue-form")) return; // forks navigate to the new conversation
    event.preventDefault();
    if (await post(form)) setStatus("The model is answering…");
  });

  // -- a search hit (or any message linked with ?at=): land on it and mark the words searched for --------------------
  const WORD = /[\p{L}\p{N}]+/gu;

  function markWords(root, query, skip) {
    const words = (query.toLowerCase().match(WORD) || []);
    if (!words.length) return;
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT, {
      acceptNode: (node) => node.parentElement.closest(skip)
        ? NodeFilter.FILTER_REJECT : NodeFilter.FILTER_ACCEPT,
    });
    const nodes = [];
    while (walker.nextNode()) nodes.push(walker.currentNode);
    for (const node of nodes) {
      const text = node.nodeValue;
      const out = document.createDocumentFragment();
      let last = 0;
      for (const match of text.matchAll(WORD)) {
        if (!words.some((word) => match[0].toLowerCase().startsWith(word))) continue;
        if (match.index > last) out.append(text.slice(last, match.index));
        const mark = document.createElement("mark");
        mark.textContent = match[0];
        out.append(mark);
        last = match.index + match[0].length;
      }
      if (last === 0) continue;
      if (last < text.length) out.append(text.slice(last));
      node.replaceWith(out);
    }
    const groups = [...root.querySelectorAll("details"), ...(root.matches("details") ? [root] : [])];
    for (const details of groups) {
      if (details.querySelector("mark")) details.open = true; // a match inside a tool's output: show it
    }
  }

  // -- long logs: the outline panel, filters by role, tool and error, the dense view ----------------------------------
  const outlinePanel = document.getElementById("outline");
  if (outlinePanel) {
    outlinePanel.addEventListener("toggle", async () => {
      if (!outlinePanel.open || outlinePanel.dataset.loaded) return;
      outlinePanel.dataset.loaded = "yes";
      const slot = outlinePanel.querySelector(".outline-slot");
      slot.textContent = "Reading the whole conversation…";
      try {
        const response = await fetch(`/c/${encodeURIComponent(cid)}/outline`, { headers: { Accept: "application/json" } });
        if (!response.ok) throw new Error(response.statusText);
        slot.replaceChildren(fragment((await response.json()).html));
      } catch (error) {
        slot.textContent = "Could not read the outline: " + error.message;
        delete outlinePanel.dataset.loaded;
      }
    });
  }

  const filters = document.getElementById("filters");
  const filterStatus = document.getElementById("filter-status");

  function applyFilters() {
    if (!filters) return;
    const roles = new Set([...filters.querySelectorAll("input[name=role]:checked")].map((el) => el.value));
    const errorsOnly = filters.elements.errors.checked;
    const tool = filters.elements.tool.value;
    const names = new Set();
    let shown = 0;
    let total = 0;
    for (const item of items.children) {
      if (!item.classList.contains("msg")) continue;
      total += 1;
      const groups = [...item.querySelectorAll("details.tool")];
      for (const group of groups) {
        names.add(group.dataset.tool);
        const hide = !roles.has("tool") || (tool && group.dataset.tool !== tool)
          || (errorsOnly && !group.classList.contains("state-error"));
        group.classList.toggle("filtered-out", Boolean(hide));
        const slot = group.nextElementSibling;
        if (slot && slot.classList.contains("page-slot")) slot.classList.toggle("filtered-out", Boolean(hide));
      }
      const kept = groups.filter((group) => !group.classList.contains("filtered-out"));
      const kind = item.dataset.kind;
      let show = kind === "tool" ? kept.length > 0 : roles.has(kind);
      // An answer's tool calls are "tool calls", not "assistant": with only those, they show without the answer's
      // own text and thinking.
      const callsOnly = !show && kind === "assistant" && kept.length > 0;
      if (callsOnly) show = true;
      item.classList.toggle("calls-only", callsOnly);
      if (show && tool) show = kept.length > 0;
      if (show && errorsOnly) show = kind === "failure" || kept.length > 0;
      item.classList.toggle("filtered-out", !show);
      if (show) shown += 1;
    }
    // The tool menu offers every tool of the loaded part, and keeps the one chosen.
    const menu = filters.elements.tool;
    for (const name of [...names].sort()) {
      if (![...menu.options].some((option) => option.value === name)) menu.add(new Option(name, name));
    }
    const active = roles.size < 5 || errorsOnly || tool;
    filterStatus.textContent = active ? `showing ${shown} of the ${total} messages loaded` : "";
  }

  if (filters) {
    document.getElementById("filter-menu").hidden = false; // filtering is the script's: without it, no menu
    filters.addEventListener("change", (event) => {
      if (event.target.name === "dense") {
        document.body.classList.toggle("dense", event.target.checked);
        try { localStorage.setItem("threadline.dense", event.target.checked ? "1" : ""); } catch (_) { /* private mode */ }
        return;
      }
      applyFilters();
    });
    filters.addEventListener("submit", (event) => event.preventDefault());
    let dense = false;
    try { dense = localStorage.getItem("threadline.dense") === "1"; } catch (_) { /* private mode */ }
    filters.elements.dense.checked = dense;
    document.body.classList.toggle("dense", dense);
    applyFilters();
  }

  // -- where each turn's time went, from the log: model time, tool time, tokens ---------------------------------------
  // A model call's time is from the message before it to the call's own message; a tool's is its recorded duration.
  function duration(ms) {
    if (ms < 1000) return `${Math.round(ms)} ms`;
    if (ms < 60000) return `${(ms / 1000).toFixed(1)} s`;
    const seconds = Math.round(ms / 1000);
    return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  }

  function count(n, word) {
    return `${n} ${word}${n === 1 ? "" : "s"}`;
  }

  // Costs are exact decimals ("0.0002475"): summed as whole picodollars, so a sum is exact, and shown as the server
  // shows one (threadline.pricing.prices.cost_text): to the cent's hundredth, six places below a cent, half up.
  function picodollars(text) {
    const [whole, fraction = ""] = text.split(".");
    return BigInt(whole) * 10n ** 12n + BigInt((fraction + "000000000000").slice(0, 12));
  }

  function costText(usd, priced, unknown) {
    if (!priced) return "unknown";
    let shown = "$0";
    if (usd > 0n) {
      const places = usd >= 10n ** 10n ? 4 : 6;
      const unit = 10n ** BigInt(12 - places);
      const rounded = (usd + unit / 2n) / unit;
      const scale = 10n ** BigInt(places);
      const dollars = Number(rounded / scale).toLocaleString("en-US");
      shown = rounded ? `$${dollars}.${String(rounded % scale).padStart(places, "0")}` : "<$0.000001";
    }
    return unknown ? `${shown} + unknown` : shown;
  }

  function timingStrip(turn) {
    let model = 0, calls = 0, failed = 0, tools = 0, toolCalls = 0, input = 0, output = 0, cached = 0;
    let usd = 0n, priced = false, unknown = false;
    const segments = [];
    for (const { item, previous } of turn) {
      const kind = item.dataset.kind;
      if (kind === "assistant" || kind === "failure") {
        calls += 1;
        if (kind === "failure") failed += 1;
        if (previous) {
          const ms = Math.max(0, Number(item.dataset.at) - Number(previous.dataset.end || previous.dataset.at));
          model += ms;
          segments.push(["model", ms, `model call ${duration(ms)}`]);
        }
        input += Number(item.dataset.in || 0);
        output += Number(item.dataset.out || 0);
        cached += Number(item.dataset.cached || 0);
        if (item.dataset.usd) { usd += picodollars(item.dataset.usd); priced = true; }
        // A call with no usage, or a part without a price, makes the turn's cost partly unknown: never "free".
        if (item.dataset.costUnknown || (kind === "assistant" && item.dataset.in === undefined)) unknown = true;
      }
      for (const group of item.querySelectorAll("details.tool[data-ms]")) {
        const ms = Number(group.dataset.ms);
        tools += ms;
        toolCalls += 1;
        segments.push(["tool", ms, `${group.dataset.tool} ${duration(ms)}`]);
      }
    }
    if (!calls && !toolCalls) return null;
    const strip = document.createElement("div");
    strip.className = "turn-timing";
    strip.setAttribute("role", "group");
    strip.setAttribute("aria-label", "Where this turn's time went");
    const bar = document.createElement("div");
    bar.className = "timing-bar";
    const total = segments.reduce((sum, segment) => sum + segment[1], 0);
    for (const [kind, ms, title] of segments) {
      const segment = document.createElement("span");
      segment.className = `seg ${kind}`;
      segment.title = title;
      // All under a millisecond (a scripted model): equal shares, so the order still shows.
      segment.style.width = `${total ? (100 * ms) / total : 100 / segments.length}%`;
      bar.append(segment);
    }
    const facts = [`model ${duration(model)} (${count(calls, "call")}${failed ? `, ${failed} failed` : ""})`];
    if (toolCalls) facts.push(`tools ${duration(tools)} (${count(toolCalls, "call")})`);
    if (input || output) {
      const fromCache = cached ? ` (${cached.toLocaleString("en-US")} cached)` : "";
      facts.push(`${input.toLocaleString("en-US")} in${fromCache} · ${output.toLocaleString("en-US")} out tokens`);
    }
    if (priced || unknown) facts.push(`cost ${costText(usd, priced, unknown)}`);
    if (!turn[0].previous && turn[0].item.dataset.kind !== "user" && hasOlder) facts.push("(its start is not loaded)");
    const text = document.createElement("div");
    text.className = "timing-facts";
    text.textContent = "This turn: " + facts.join(" · ");
    strip.append(bar, text);
    return strip;
  }

  // The header's total (tokens, cached, cost) reads the whole log: asked for once the page has opened, and again as
  // messages arrive live; one request at a time, and one more after it when messages came meanwhile.
  function refreshSpending() {
    const spending = document.getElementById("spending");
    if (!spending) return;
    if (spending.dataset.busy) {
      spending.dataset.again = "1";
      return;
    }
    spending.dataset.busy = "1";
    fetch(spending.dataset.src, { headers: { accept: "application/json" } })
      .then((response) => (response.ok ? response.json() : null))
      .then((data) => {
        if (!data) return;
        spending.textContent = data.text;
        spending.hidden = !data.text;
      })
      .catch(() => { /* the header keeps its last total */ })
      .finally(() => {
        delete spending.dataset.busy;
        if (spending.dataset.again) {
          delete spending.dataset.again;
          refreshSpending();
        }
      });
  }

  function renderTimings() {
    for (const old of items.querySelectorAll(".turn-timing")) old.remove();
    const list = [...items.children].filter((el) => el.classList.contains("msg"));
    const turns = [];
    list.forEach((item, index) => {
      if (item.dataset.kind === "user" || !turns.length) turns.push([]);
      turns[turns.length - 1].push({ item, previous: list[index - 1] });
    });
    for (const turn of turns) {
      const strip = timingStrip(turn);
      if (!strip) continue;
      const last = turn[turn.length - 1].item;
      last.insertBefore(strip, last.querySelector(":scope > .msg-actions"));
    }
  }

  // The toolbar shows the conversation's title while the header's is out of sight (a conversation opens at its end).
  const toolbar = document.getElementById("toolbar");
  const headerTitle = document.getElementById("conv-title");
  if (toolbar && headerTitle && "IntersectionObserver" in window) {
    new IntersectionObserver((entries) => {
      for (const entry of entries) toolbar.classList.toggle("header-gone", !entry.isIntersecting);
    }).observe(headerTitle);
  }
  // Rename, clicked in the toolbar, puts the cursor in the title box.
  const rename = document.querySelector("#toolbar details.rename");
  if (rename) {
    rename.addEventListener("toggle", () => {
      if (rename.open) rename.querySelector("input[name=title]").focus();
    });
  }

  // The toolbar's menus close when the reader clicks elsewhere or presses Escape.
  const menus = [...document.querySelectorAll("#toolbar details.dropdown")];
  document.addEventListener("click", (event) => {
    for (const menu of menus) if (menu.open && !menu.contains(event.target)) menu.open = false;
  });
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") for (const menu of menus) menu.open = false;
  });

  renderTimings(); // before landing anywhere: the strips take room
  applyTurnBadges();
  refreshSpending();

  const hitId = timeline.dataset.hit;
  const hit = hitId ? items.querySelector(".msg.hit") : null;
  if (hit) {
    if (timeline.dataset.query) {
      // A tool result is a message of its own, shown inside its call's group: mark only there. A message's own
      // text, and its calls' arguments, are the rest of its item (the outputs are other messages).
      const group = [...hit.querySelectorAll("details.tool")].find((el) => el.dataset.resultId === hitId);
      const chrome = ".msg-head, .msg-actions, button, mark, .no-mark";
      if (group) markWords(group, timeline.dataset.query, chrome + ", summary");
      else markWords(hit, timeline.dataset.query, chrome + ", .tool-output");
    }
    // A match past the part shown is told of at the bottom of a long item: land on that note.
    (hit.querySelector(".cut-match") || hit).scrollIntoView({ block: "center" });
  } else if (timeline.dataset.start === "true") {
    window.scrollTo(0, 0);
  } else if (!location.hash) {
    scrollToBottom();
  }
  if (atEnd) startLive();
  else watchHeader();
})();
