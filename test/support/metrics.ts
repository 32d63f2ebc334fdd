// Scraping a controller's secure /metrics from inside a pod, as Prometheus would: HTTPS (the certificate is the
// controller's own, self-signed, so not verified) with the pod's ServiceAccount token.

/** A `node -e` script printing the status and body of https://<host>:<port>/metrics, sent with the pod's token or none. */
export function scrapeScript(port: number, host = '127.0.0.1', withToken = true): string {
  const token = withToken
    ? '{ authorization: "Bearer " + require("fs").readFileSync("/var/run/secrets/kubernetes.io/serviceaccount/token", "utf8") }'
    : '{}';
  return `require("https").get({ host: ${JSON.stringify(host)}, port: ${port}, path: "/metrics", rejectUnauthorized: false, ` +
    `headers: ${token} }, (r) => { let b = ""; r.on("data", (c) => (b += c)).on("end", () => console.log(r.statusCode + "\\n" + b)); })`;
}
