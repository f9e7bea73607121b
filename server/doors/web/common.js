// Shared by the ask page and the admin page: the API key (kept for this tab only), calls to
// the HTTP API with it as a bearer header, and DOM helpers that only ever set text.
"use strict";

const KEY_NAME = "docfinder.key";

const docfinder = {
  key() {
    return sessionStorage.getItem(KEY_NAME);
  },
  setKey(key) {
    sessionStorage.setItem(KEY_NAME, key);
  },
  forget() {
    sessionStorage.removeItem(KEY_NAME);
  },
  headers(extra) {
    const headers = Object.assign({}, extra || {});
    const key = docfinder.key();
    if (key) headers.Authorization = "Bearer " + key;
    return headers;
  },
  // A JSON call to the API; an error reply becomes an Error with the server's message.
  async call(path, options) {
    const opts = Object.assign({}, options || {});
    opts.headers = docfinder.headers(opts.headers);
    const response = await fetch(path, opts);
    if (!response.ok) throw await docfinder.failure(response);
    return response;
  },
  async json(path, options) {
    return (await docfinder.call(path, options)).json();
  },
  async failure(response) {
    let message = response.status + " " + response.statusText;
    try {
      const body = await response.json();
      if (body && body.error) message = body.error;
    } catch (ignored) {
      // not JSON: the status line says enough
    }
    const error = new Error(message);
    error.status = response.status;
    return error;
  },
  // Server-sent events from a POST response: calls onEvent(name, data) for each event.
  async readEvents(response, onEvent) {
    const reader = response.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let end;
      while ((end = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, end);
        buffer = buffer.slice(end + 2);
        let name = "message";
        const data = [];
        for (const line of block.split("\n")) {
          if (line.startsWith("event: ")) name = line.slice(7);
          else if (line.startsWith("data: ")) data.push(line.slice(6));
        }
        if (data.length) onEvent(name, JSON.parse(data.join("\n")));
      }
    }
  },
  // An element with text content only (never HTML), attributes and children.
  el(tag, attributes, ...children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attributes || {})) {
      if (value === null || value === undefined || value === false) continue;
      if (name === "text") node.textContent = value;
      else node.setAttribute(name, value === true ? "" : String(value));
    }
    for (const child of children) {
      if (child === null || child === undefined) continue;
      node.append(child instanceof Node ? child : document.createTextNode(String(child)));
    }
    return node;
  },
  notice(text) {
    const notice = document.getElementById("notice");
    notice.textContent = text || "";
    notice.hidden = !text;
  },
  // The sign-in form: probe(key) must resolve when the key works; onSignedIn runs after.
  signIn(probe, onSignedIn) {
    const form = document.getElementById("sign-in");
    const signedIn = document.getElementById("signed-in");
    const show = (yes) => {
      form.hidden = yes;
      signedIn.hidden = !yes;
    };
    const attempt = async (key) => {
      docfinder.setKey(key);
      try {
        await probe();
        show(true);
        docfinder.notice("");
        await onSignedIn();
      } catch (error) {
        docfinder.forget();
        show(false);
        docfinder.notice(error.status === 401 ? "That API key was not accepted." : error.message);
        document.getElementById("key").focus();
      }
    };
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      const input = document.getElementById("key");
      const key = input.value.trim();
      input.value = "";
      attempt(key);
    });
    document.getElementById("sign-out").addEventListener("click", () => {
      docfinder.forget();
      location.reload();
    });
    const quietly = async () => {
      // A server without API keys answers its own machine without one: sign in at once there;
      // where a key is needed, say nothing and wait for it.
      docfinder.setKey("");
      try {
        await probe();
      } catch (error) {
        docfinder.forget();
        return;
      }
      show(true);
      const who = document.getElementById("who");
      if (who) who.textContent = "No key needed on this machine";
      await onSignedIn();
    };
    if (docfinder.key() !== null) attempt(docfinder.key());
    else quietly();
  },
};
