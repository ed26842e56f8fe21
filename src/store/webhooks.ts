import { randomUUID } from 'node:crypto';
import type { Executor, WebhookDeliveryStatus } from './database.js';
import { claimDueRows, deleteFinishedRowsBefore } from './leased-claims.js';

export interface WebhookEndpoint {
  id: string;
  url: string;
  events: string[];
  sealedSecret: string;
  createdAt: Date;
}

/** An event for one endpoint, as the audit trail puts it in the outbox. */
export interface NewDelivery {
  id: string;
  endpointId: string;
  eventType: string;
  payload: string;
  createdAt: Date;
}

/** A delivery a worker has claimed, with what it needs to make the attempt. */
export interface ClaimedDelivery {
  id: string;
  endpointId: string;
  url: string;
  sealedSecret: string;
  eventType: string;
  payload: string;
  createdAt: Date;
  /** 1 for the first attempt. */
  attempt: number;
  attemptId: string;
}

/** One line of an endpoint's delivery log; an attempt not yet started has no `attemptedAt`. */
export interface DeliveryAttempt {
  eventId: string;
  eventType: string;
  attempt: number;
  status: WebhookDeliveryStatus;
  responseStatus?: number;
  attemptedAt?: Date;
}

/** Adds an endpoint; its secret must already be sealed. */
export async function insertEndpoint(db: Executor, endpoint: WebhookEndpoint): Promise<void> {
  await db
    .insertInto('webhook_endpoint')
    .values({
      id: endpoint.id,
      url: endpoint.url,
      events: JSON.stringify(endpoint.events),
      sealed_secret: endpoint.sealedSecret,
      created_at: endpoint.createdAt.toISOString(),
    })
    .execute();
}

/** Every endpoint, oldest first. */
export async function listEndpoints(db: Executor): Promise<WebhookEndpoint[]> {
  const rows = await db.selectFrom('webhook_endpoint').selectAll().orderBy('created_at').orderBy('id').execute();
  return rows.map((row) => ({
    id: row.id,
    url: row.url,
    events: JSON.parse(row.events) as string[],
    sealedSecret: row.sealed_secret,
    createdAt: new Date(row.created_at),
  }));
}

/** True when the endpoint existed (its deliveries and their attempts go with it). */
export async function deleteEndpoint(db: Executor, id: string): Promise<boolean> {
  if (id.includes('\0')) return false; // PostgreSQL text cannot hold NUL
  const row = await db.deleteFrom('webhook_endpoint').where('id', '=', id).returning('id').executeTakeFirst();
  return row !== undefined;
}

/** True when the endpoint exists. */
export async function hasEndpoint(db: Executor, id: string): Promise<boolean> {
  if (id.includes('\0')) return false;
  return (await db.selectFrom('webhook_endpoint').select('id').where('id', '=', id).executeTakeFirst()) !== undefined;
}

/** Puts deliveries in the outbox, due at once. */
export async function insertDeliveries(db: Executor, deliveries: NewDelivery[]): Promise<void> {
  if (deliveries.length === 0) return;
  await db
    .insertInto('webhook_delivery')
    .values(
      deliveries.map((delivery) => ({
        id: delivery.id,
        endpoint_id: delivery.endpointId,
        event_type: delivery.eventType,
        payload: delivery.payload,
        status: 'pending' as const,
        attempts: 0,
        due_at: delivery.createdAt.toISOString(),
        created_at: delivery.createdAt.toISOString(),
      })),
    )
    .execute();
}

/**
 * Claims up to `limit` due deliveries until `leaseUntil` and records an attempt (`pending`) for
 * each. One conditional update settles races between workers: PostgreSQL's SKIP LOCKED lets
 * them pass each other's rows by; SQLite runs one writer at a time. An attempt left `pending` by
 * a worker that died is marked failed when its delivery is claimed again. `exceptIds`: deliveries
 * the caller is still attempting, whatever their lease says.
 */
export async function claimDueDeliveries(
  db: Executor,
  claim: { now: Date; leaseUntil: Date; limit: number; exceptIds?: string[] },
): Promise<ClaimedDelivery[]> {
  const now = claim.now.toISOString();
  const { rows: claimed } = await claimDueRows(db, 'webhook_delivery', claim, [
    'id',
    'endpoint_id',
    'event_type',
    'payload',
    'attempts',
    'created_at',
  ]);
  if (claimed.length === 0) return [];

  const ids = claimed.map((row) => row.id);
  await db
    .updateTable('webhook_attempt')
    .set({ status: 'failed' })
    .where('delivery_id', 'in', ids)
    .where('status', '=', 'pending')
    .execute();
  const attemptIds = new Map(ids.map((id) => [id, randomUUID()]));
  await db
    .insertInto('webhook_attempt')
    .values(
      claimed.map((row) => ({
        id: attemptIds.get(row.id) ?? '',
        delivery_id: row.id,
        attempt: row.attempts,
        status: 'pending' as const,
        response_status: null,
        attempted_at: now,
      })),
    )
    .execute();
  const endpoints = await db
    .selectFrom('webhook_endpoint')
    .select(['id', 'url', 'sealed_secret'])
    .where('id', 'in', [...new Set(claimed.map((row) => row.endpoint_id))])
    .execute();
  const endpointById = new Map(endpoints.map((endpoint) => [endpoint.id, endpoint]));
  return claimed.flatMap((row) => {
    const endpoint = endpointById.get(row.endpoint_id);
    // Deleted meanwhile: its deliveries went with it.
    if (!endpoint) return [];
    return [
      {
        id: row.id,
        endpointId: row.endpoint_id,
        url: endpoint.url,
        sealedSecret: endpoint.sealed_secret,
        eventType: row.event_type,
        payload: row.payload,
        createdAt: new Date(row.created_at),
        attempt: row.attempts,
        attemptId: attemptIds.get(row.id) ?? '',
      },
    ];
  });
}

/**
 * Records how a claimed attempt ended, and the delivery's fate: done (`succeeded`, or `failed`
 * for good) or `pending` again from `dueAt`. A worker whose claim lapsed and was taken over
 * changes only its own attempt. Two statements: run it in a transaction.
 */
export async function finishAttempt(
  db: Executor,
  finished: {
    delivery: ClaimedDelivery;
    status: 'succeeded' | 'failed';
    responseStatus?: number;
    next: { status: WebhookDeliveryStatus; dueAt: Date };
  },
): Promise<void> {
  // The delivery's row first, then its attempt's: the order in which deleting an endpoint
  // cascades, so that the two never wait for each other.
  await db
    .updateTable('webhook_delivery')
    .set({ status: finished.next.status, due_at: finished.next.dueAt.toISOString(), lease_id: null })
    .where('id', '=', finished.delivery.id)
    .where('attempts', '=', finished.delivery.attempt)
    .where('status', '=', 'pending')
    .execute();
  await db
    .updateTable('webhook_attempt')
    .set({ status: finished.status, response_status: finished.responseStatus ?? null })
    .where('id', '=', finished.delivery.attemptId)
    .execute();
}

/**
 * Puts a delivery of the endpoint that is done (succeeded or given up) back in the outbox, due
 * now: one more attempt (an operator's redelivery). False when the endpoint has no such delivery
 * or it is still pending (waiting or being attempted).
 */
export async function redeliver(db: Executor, endpointId: string, deliveryId: string, now: Date): Promise<boolean> {
  const row = await db
    .updateTable('webhook_delivery')
    .set({ status: 'pending', due_at: now.toISOString(), lease_id: null })
    .where('id', '=', deliveryId)
    .where('endpoint_id', '=', endpointId)
    .where('status', '<>', 'pending')
    .returning('id')
    .executeTakeFirst();
  return row !== undefined;
}

/** True when the endpoint has a delivery with this id. */
export async function hasDelivery(db: Executor, endpointId: string, deliveryId: string): Promise<boolean> {
  const row = await db
    .selectFrom('webhook_delivery')
    .select('id')
    .where('id', '=', deliveryId)
    .where('endpoint_id', '=', endpointId)
    .executeTakeFirst();
  return row !== undefined;
}

/** The endpoint's attempts, newest first, after its deliveries waiting for their next attempt. */
export async function listDeliveryAttempts(
  db: Executor,
  endpointId: string,
  limit: number,
): Promise<DeliveryAttempt[]> {
  const waiting = await db
    .selectFrom('webhook_delivery')
    .select(['id', 'event_type', 'attempts'])
    .where('endpoint_id', '=', endpointId)
    .where('status', '=', 'pending')
    .where('lease_id', 'is', null)
    .orderBy('created_at', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .execute();
  const attempts = await db
    .selectFrom('webhook_attempt')
    .innerJoin('webhook_delivery', 'webhook_delivery.id', 'webhook_attempt.delivery_id')
    .select([
      'webhook_delivery.id as delivery_id',
      'webhook_delivery.event_type',
      'webhook_attempt.attempt',
      'webhook_attempt.status',
      'webhook_attempt.response_status',
      'webhook_attempt.attempted_at',
    ])
    .where('webhook_delivery.endpoint_id', '=', endpointId)
    .orderBy('webhook_attempt.attempted_at', 'desc')
    .orderBy('webhook_attempt.attempt', 'desc')
    .limit(limit)
    .execute();
  return [
    ...waiting.map((row) => ({
      eventId: row.id,
      eventType: row.event_type,
      attempt: row.attempts + 1,
      status: 'pending' as const,
    })),
    ...attempts.map((row) => ({
      eventId: row.delivery_id,
      eventType: row.event_type,
      attempt: row.attempt,
      status: row.status,
      responseStatus: row.response_status ?? undefined,
      attemptedAt: new Date(row.attempted_at),
    })),
  ].slice(0, limit);
}

/**
 * Deletes at most `limit` of the deliveries done (succeeded or given up) of events made before
 * `cutoff`, oldest first, with their attempts; returns how many.
 */
export function deleteFinishedDeliveriesBefore(db: Executor, cutoff: Date, limit: number): Promise<number> {
  return deleteFinishedRowsBefore(db, 'webhook_delivery', cutoff, limit);
}

/** How many deliveries are not yet done, and when the oldest of them was made (undefined: none). */
export async function describeOutbox(db: Executor): Promise<{ depth: number; oldestCreatedAt?: Date }> {
  const row = await db
    .selectFrom('webhook_delivery')
    .select((eb) => [eb.fn.countAll<number | string>().as('depth'), eb.fn.min('created_at').as('oldest')])
    .where('status', '=', 'pending')
    .executeTakeFirstOrThrow();
  return { depth: Number(row.depth), oldestCreatedAt: row.oldest ? new Date(row.oldest) : undefined };
}
