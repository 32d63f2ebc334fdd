// What the operators' samples share: the public images they name and a hardened one-container Deployment. Every
// sample is admitted where the restricted Pod Security Standard is enforced, and names no namespace: kubectl's
// -n (or the context's) decides. On the local cluster nothing is pulled: `npm start` applies them with stand-ins
// built from the package registries in place of these images (images/recipes.ts, sampleStandIns).
import { k8s } from 'cdk8s-plus-27';
import type { Construct } from 'constructs';
import { restrictedContainerSecurity, restrictedPodSecurity, smallContainerResources } from './pod-security.ts';

const quantities = (values: Record<string, string>) =>
  Object.fromEntries(Object.entries(values).map(([name, value]) => [name, k8s.Quantity.fromString(value)]));

/** Adds an operator's example, with the workloads it acts on, to the samples chart. */
export type SampleWriter = (scope: Construct) => void;

/** The public images the samples name, by what they are for. */
export const sampleImages = {
  /** A web server answering "Hello World" on 8000. */
  helloWorld: 'crccheck/hello-world:v1.0.0',
  /** A shell and the usual tools, for debug containers. */
  tools: 'busybox:1.36',
  postgresql: 'postgres:15',
  /** A JDK that runs a single-file Java program (`java App.java`), with jcmd to load an agent by. */
  jdk: 'eclipse-temurin:17-jdk',
};

/** The sample JVM service: HTTP on 8080, run from source by the JDK image, the source in a ConfigMap. */
export const javaAppSource = `import com.sun.net.httpserver.HttpServer;
import java.net.InetSocketAddress;

public class App {
  public static void main(String[] args) throws Exception {
    HttpServer server = HttpServer.create(new InetSocketAddress(8080), 0);
    server.createContext("/", exchange -> {
      byte[] body = ("java-app on " + Runtime.version() + "\\n").getBytes();
      exchange.sendResponseHeaders(200, body.length);
      exchange.getResponseBody().write(body);
      exchange.close();
    });
    server.start();
    System.out.println("listening on 8080");
  }
}
`;

export interface SampleAppOptions {
  port: number;
  /** Overrides the image's entrypoint. */
  command?: string[];
  /** Mounts these files (a ConfigMap of the same name as the app) at /app. */
  files?: Record<string, string>;
  /** Gives the container a writable /tmp (a JVM's attach socket lives there). */
  tmp?: boolean;
}

/** A one-replica Deployment of `image` whose pods carry app=`name`, hardened as the restricted standard asks. */
export function sampleApp(scope: Construct, name: string, image: string, options: SampleAppOptions): void {
  const labels = { app: name };
  const mounts = [...options.files ? [{ name: 'files', mountPath: '/app', readOnly: true }] : [],
    ...options.tmp ? [{ name: 'tmp', mountPath: '/tmp' }] : []];
  const volumes = [...options.files ? [{ name: 'files', configMap: { name } }] : [],
    ...options.tmp ? [{ name: 'tmp', emptyDir: {} }] : []];
  if (options.files) new k8s.KubeConfigMap(scope, `${name}-files`, { metadata: { name, labels }, data: options.files });
  new k8s.KubeDeployment(scope, name, {
    metadata: { name, labels },
    spec: {
      replicas: 1,
      selector: { matchLabels: labels },
      template: {
        metadata: { labels },
        spec: {
          securityContext: restrictedPodSecurity,
          containers: [{ name: 'app', image, ...options.command ? { command: options.command } : {},
            ports: [{ containerPort: options.port }], securityContext: restrictedContainerSecurity,
            resources: { requests: quantities(smallContainerResources.requests),
              limits: quantities(smallContainerResources.limits) },
            ...mounts.length ? { volumeMounts: mounts } : {} }],
          ...volumes.length ? { volumes } : {},
        },
      },
    },
  });
}
