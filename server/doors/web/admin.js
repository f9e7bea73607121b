// The admin page: the feedback summed up as charts (SVG drawn here, each with a table for
// screen readers), the worst-rated questions with their answers and sources, and the export.
"use strict";

const el = docfinder.el;
const SVG = "http://www.w3.org/2000/svg";

function svg(tag, attributes, text) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attributes)) node.setAttribute(name, String(value));
  if (text !== undefined) node.textContent = text;
  return node;
}

// A horizontal bar chart of [label, value] rows, with the same numbers as a table.
function barChart(title, rows, maximum, unit) {
  const rowHeight = 26;
  const labelWidth = 210;
  const width = 560;
  const height = Math.max(rowHeight * rows.length, rowHeight);
  const top = Math.max(maximum || 0, ...rows.map((r) => r[1] || 0), 1);
  const chart = svg("svg", { viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": title, class: "chart" });
  rows.forEach(([label, value], i) => {
    const y = i * rowHeight;
    const length = ((value || 0) / top) * (width - labelWidth - 60);
    chart.append(svg("text", { x: labelWidth - 8, y: y + 17, "text-anchor": "end", class: "axis" }, label.length > 30 ? label.slice(0, 29) + "…" : label));
    chart.append(svg("rect", { x: labelWidth, y: y + 5, width: Math.max(length, 1), height: rowHeight - 10, class: "bar" }));
    chart.append(svg("text", { x: labelWidth + length + 6, y: y + 17, class: "value" }, value === null ? "n/a" : String(value)));
  });
  const table = el("table", { class: "visually-hidden" },
    el("caption", { text: title }),
    el("tbody", {}, ...rows.map(([label, value]) => el("tr", {}, el("th", { scope: "row", text: label }), el("td", { text: value === null ? "n/a" : value + (unit || "") })))));
  return [chart, table];
}

function groups(values) {
  return Object.entries(values).map(([key, group]) => [key + " (" + group.records + ")", group.mean_rating]);
}

async function load() {
  const summary = await docfinder.json("/v1/feedback/summary");
  document.getElementById("report").hidden = false;
  document.getElementById("overview").textContent =
    summary.records + (summary.records === 1 ? " judgement" : " judgements") + "; mean rating " + (summary.mean_rating === null ? "n/a" : summary.mean_rating.toFixed(2)) +
    "; by platform: " + (Object.entries(summary.by_platform).map(([p, n]) => p + " " + n).join(", ") || "none") + ".";
  document.getElementById("ratings").replaceChildren(...barChart("Answers per star rating", Object.entries(summary.ratings).map(([stars, n]) => [stars + (stars === "1" ? " star" : " stars"), n])));
  document.getElementById("labels").replaceChildren(...barChart("Judgements per label", Object.entries(summary.labels)));
  document.getElementById("collections").replaceChildren(...barChart("Mean rating by collection (judgements)", groups(summary.by_collection), 5));
  document.getElementById("domains").replaceChildren(...barChart("Mean rating by domain (judgements)", groups(summary.by_domain), 5));
  document.getElementById("days").replaceChildren(...barChart("Judgements per day", Object.entries(summary.by_day).map(([day, g]) => [day, g.records])));
  document.querySelector("#worst tbody").replaceChildren(...summary.worst_questions.map((w) =>
    el("tr", {},
      el("td", { text: w.question }),
      el("td", { text: w.mean_rating === null ? "n/a" : w.mean_rating }),
      el("td", { text: w.judgements }),
      el("td", { text: Object.entries(w.labels).map(([label, n]) => label + " ×" + n).join("; ") }),
      el("td", {}, el("p", { text: w.answer }), el("ul", {}, ...(w.sources || []).map((s) => el("li", { text: s })))))));
}

async function exportRecords() {
  const response = await docfinder.call("/v1/feedback/export");
  const url = URL.createObjectURL(await response.blob());
  const link = el("a", { href: url, download: "docfinder-feedback.jsonl" });
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

document.getElementById("refresh").addEventListener("click", () => load().catch((e) => docfinder.notice(e.message)));
document.getElementById("export").addEventListener("click", () => exportRecords().catch((e) => docfinder.notice(e.message)));
docfinder.signIn(() => docfinder.json("/v1/feedback/summary"), async () => {
  await load();
  // Live: the charts follow new ratings while the page is open and shown.
  setInterval(() => {
    if (!document.hidden) load().catch((e) => docfinder.notice(e.message));
  }, 30000);
});
