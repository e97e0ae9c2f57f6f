// OnAir public pages: the player (native HLS, or hls.js loaded on demand
// after the page), the live chat over the public WebSocket, the replay of an
// archive's chat in step with playback, and small progressive enhancements.
// Every page works without this file except playback in browsers without
// native HLS and the realtime chat.
(function () {
  'use strict';

  var $ = function (id) { return document.getElementById(id); };
  var player = $('player');
  var media = $('media');
  var chat = $('chat');
  var list = $('messages');
  var framed = window.parent !== window;

  // Times are rendered in UTC by the server; show them in the reader's zone.
  function localTimes(root) {
    Array.prototype.forEach.call(root.querySelectorAll('time[data-local]'), function (t) {
      var d = new Date(t.getAttribute('datetime'));
      if (!isNaN(d)) t.textContent = d.toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' });
    });
  }
  localTimes(document);

  // ---- Pages that follow the show ---------------------------------------

  // refetch fetches this page again and puts its data-follow parts in
  // place of ours, by id: the server renders the new state (a live show's
  // Stop button, the home page's "Live now"). Calls while one runs make
  // one more after it.
  var fetching = null, again = false;
  function refetch(then) {
    if (!window.fetch || !window.DOMParser) return;
    if (fetching) { again = true; return; }
    fetching = fetch(location.href, { credentials: 'same-origin', cache: 'no-store', headers: { Accept: 'text/html' } })
      .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
      .then(function (html) {
        var doc = new DOMParser().parseFromString(html, 'text/html');
        Array.prototype.forEach.call(document.querySelectorAll('[data-follow]'), function (el) {
          var next = el.id && doc.getElementById(el.id);
          if (next) {
            next = document.importNode(next, true);
            el.replaceWith(next);
            localTimes(next);
          }
        });
        if (then) then();
      })
      .catch(function () {})
      .then(function () {
        fetching = null;
        if (again) { again = false; refetch(then); }
      });
  }

  // The home page: its lists follow the public shows' events; on
  // (re)connecting, a generation other than the page's means it missed
  // some. Many pages get each event at once: each waits up to a second.
  var homeShows = $('home-shows');
  if (homeShows && window.EventSource) {
    var homeFeed = new EventSource(homeShows.getAttribute('data-events'));
    var soon = function () { setTimeout(refetch, Math.random() * 1000); };
    homeFeed.addEventListener('generation', function (e) {
      if (e.data !== $('home-shows').getAttribute('data-generation')) soon();
    });
    homeFeed.addEventListener('shows', soon);
  }

  // Forms that do something irreversible ask first.
  document.addEventListener('submit', function (e) {
    var q = e.target.getAttribute('data-confirm');
    if (q && !window.confirm(q)) e.preventDefault();
  });

  // ---- Studio -----------------------------------------------------------

  // The start is sent and rendered in UTC; in the browser it is entered in
  // the reader's zone, whose IANA name goes with the form.
  var zone = '';
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || ''; } catch (_) { /* old browser: UTC */ }
  if (zone) {
    var pad = function (n) { return (n < 10 ? '0' : '') + n; };
    Array.prototype.forEach.call(document.querySelectorAll('input[type=datetime-local][data-utc]'), function (i) {
      var d = new Date(i.getAttribute('data-utc'));
      if (!i.value || isNaN(d)) return;
      i.value = d.getFullYear() + '-' + pad(d.getMonth() + 1) + '-' + pad(d.getDate()) + 'T' + pad(d.getHours()) + ':' + pad(d.getMinutes());
    });
    Array.prototype.forEach.call(document.querySelectorAll('input[data-tz]'), function (i) { i.value = zone; });
    Array.prototype.forEach.call(document.querySelectorAll('[data-tzname]'), function (s) { s.textContent = 'your time zone (' + zone + ')'; });
  }

  // Copy buttons, shown only where the clipboard is there to use.
  if (navigator.clipboard) {
    Array.prototype.forEach.call(document.querySelectorAll('button[data-copy]'), function (b) {
      b.hidden = false;
      b.addEventListener('click', function () {
        var src = $(b.getAttribute('data-copy'));
        navigator.clipboard.writeText(src.textContent.trim()).then(function () {
          b.textContent = 'Copied';
          setTimeout(function () { b.textContent = 'Copy'; }, 2000);
        });
      });
    });
  }

  // Stream health in the studio, kept current by server-sent events, with
  // the show's state: when it is not the page's, the page fetches its
  // state, summary, actions (Stop) and statistics again.
  var healthBox = $('health');
  if (healthBox && window.EventSource) {
    var set = function (id, text) { var el = $(id); if (el) el.textContent = text; };
    var es = new EventSource(healthBox.getAttribute('data-events'));
    es.addEventListener('state', function (e) {
      var badge = $('studio-state'), st;
      try { st = JSON.parse(e.data); } catch (_) { return; }
      if (st === 'deleted') { location.href = '/studio'; return; }
      if (badge && badge.getAttribute('data-state') !== st) refetch(refreshStats);
    });
    es.onmessage = function (e) {
      var h;
      try { h = JSON.parse(e.data); } catch (_) { return; }
      var r = $('h-receiving');
      if (r.textContent !== (h.receiving ? 'yes' : 'no')) r.textContent = h.receiving ? 'yes' : 'no';
      r.className = h.receiving ? 'ok' : 'bad';
      set('h-video', h.video_codec ? h.video_codec + ', ' + h.video_bitrate + ' kb/s' : '—');
      set('h-audio', h.audio_codec ? h.audio_codec + ', ' + h.audio_bitrate + ' kb/s' : '—');
      set('h-size', h.width && h.height ? h.width + '×' + h.height : '—');
      set('h-fps', h.fps ? h.fps + ' fps' : '—');
      set('h-keyframes', h.keyframe_interval ? 'every ' + h.keyframe_interval + ' s' : '—');
      set('h-viewers', String(h.viewers));
      set('h-peak', String(h.peak_viewers));
      var timing = !h.receiving ? '—' : h.behind_seconds >= 1 ? h.behind_seconds + ' s behind real time' : 'on time';
      if (h.receiving && h.timestamp_gaps > 0) timing += ', ' + h.timestamp_gaps + (h.timestamp_gaps === 1 ? ' gap' : ' gaps') + ' in the last minute';
      set('h-timing', timing);
      set('h-since', h.since ? new Date(h.since.replace(' ', 'T') + 'Z').toLocaleString() : '—');
      // Rewritten only when they change, so a screen reader hears each once.
      var ul = $('h-warnings'), ws = h.warnings || [];
      if (ul.getAttribute('data-list') !== JSON.stringify(ws)) {
        ul.setAttribute('data-list', JSON.stringify(ws));
        ul.textContent = '';
        ws.forEach(function (w) { var li = document.createElement('li'); li.textContent = w; ul.appendChild(li); });
      }
      var dl = $('h-destinations'), ds = h.destinations || [];
      if (dl && dl.getAttribute('data-list') !== JSON.stringify(ds)) {
        dl.setAttribute('data-list', JSON.stringify(ds));
        if (ds.length) {
          dl.textContent = '';
          ds.forEach(function (d) {
            var li = document.createElement('li');
            li.textContent = d.name + ': ' + d.state + (d.state === 'connected' ? ', ' + d.bitrate + ' kb/s' : '') + (d.error ? ' (' + d.error + ')' : '');
            dl.appendChild(li);
          });
        }
      }
      healthBox.setAttribute('data-updated', String(Date.now()));
    };
  }

  // A live show's statistics in the studio: the panel is fetched anew
  // every sampling interval until the show ends (the new panel has no
  // data-refresh then).
  var statsTimer = null;
  function refreshStats() {
    var box = $('stats');
    clearTimeout(statsTimer);
    if (!box || !box.getAttribute('data-refresh') || !window.fetch) return;
    var every = Math.max(1000, parseInt(box.getAttribute('data-every'), 10) || 10000);
    statsTimer = setTimeout(function () {
      fetch(box.getAttribute('data-refresh'), { credentials: 'same-origin', cache: 'no-store' })
        .then(function (r) { return r.ok ? r.text() : Promise.reject(r.status); })
        .then(function (html) {
          var next = new DOMParser().parseFromString(html, 'text/html').getElementById('stats');
          var now = $('stats');
          if (next && now) now.replaceWith(document.importNode(next, true));
        })
        .catch(function () {})
        .then(refreshStats);
    }, every);
  }
  refreshStats();

  // ---- Player -----------------------------------------------------------

  function notice(text) {
    if (!player) return;
    var p = player.querySelector('.notice');
    if (!p) {
      p = document.createElement('p');
      p.className = 'notice';
      p.setAttribute('role', 'status');
      player.appendChild(p);
    }
    p.textContent = text;
  }

  var autoplay = true;
  function play() {
    if (!autoplay) return;
    var p = media.play();
    if (p && p.catch) p.catch(function () { /* autoplay refused: the controls are there */ });
  }

  // Native HLS where it is the browser's own mature player: Apple's
  // browsers, and any browser that has no Media Source Extensions for
  // hls.js to use. Chromium reports native HLS support too, but its young
  // built-in player fails on live MPEG-TS playlists, so everywhere else
  // hls.js plays (loaded only now, after the page).
  function preferNative() {
    if (!media.canPlayType('application/vnd.apple.mpegurl')) return false;
    var mse = window.ManagedMediaSource || window.MediaSource;
    return /Apple/.test(navigator.vendor || '') || !mse;
  }

  var hlsLoading = null;
  function loadHls(done) {
    if (window.Hls) return done(window.Hls);
    if (!hlsLoading) {
      hlsLoading = [];
      var s = document.createElement('script');
      s.src = player.getAttribute('data-hls');
      s.async = true;
      s.onload = function () { hlsLoading.forEach(function (f) { f(window.Hls); }); };
      s.onerror = function () { notice('The player could not be loaded.'); };
      document.head.appendChild(s);
    }
    hlsLoading.push(done);
  }

  function startPlayer() {
    if (!player || !media) return;
    var src = player.getAttribute('data-src');
    if (!src || player.getAttribute('data-engine')) return;
    var stale = player.querySelector('.notice');
    if (stale) stale.remove();
    var poster = player.querySelector('.poster');
    if (poster) poster.remove();
    player.classList.remove('idle');
    media.hidden = false;
    if ($('live-controls')) $('live-controls').hidden = false;
    if (preferNative()) {
      player.setAttribute('data-engine', 'native');
      media.src = src;
      play();
      return;
    }
    player.setAttribute('data-engine', 'hls.js');
    loadHls(function (Hls) {
      if (!Hls || !Hls.isSupported()) {
        notice('This browser cannot play HLS streams.');
        return;
      }
      // Low-latency HLS: hls.js loads the playlists' parts with blocking
      // reloads and holds PART-HOLD-BACK behind the live edge, plus
      // liveSyncOnStallIncrease for each stall (hls.js's default, a whole
      // second, doubles a low-latency hold-back at the first one).
      // liveSyncDuration (and so liveMaxLatencyDuration, which needs it)
      // is left unset: it would override PART-HOLD-BACK, and snap a viewer
      // who rewound (DVR) back to the edge. Archives (VOD) ignore all this.
      var hls = new Hls({
        backBufferLength: 60,
        lowLatencyMode: true,
        liveSyncOnStallIncrease: 0.2,
        // hls.js's own catch-up only plays faster while more than a
        // second is buffered, which a hold-back under a second never is:
        // off, catchUp below does it.
        maxLiveSyncPlaybackRate: 1
      });
      // A player behind its target (after a stall, a background tab) by
      // up to a target duration plays up to 1.25x until it is back: the
      // further behind, the faster, while more than a part is buffered.
      // Further behind is a viewer who rewound, left where they are.
      media.addEventListener('timeupdate', function catchUp() {
        var d = hls.latestLevelDetails, target = hls.targetLatency, b = media.buffered;
        if (!d || !d.live || target == null || media.paused || !b.length) return;
        var late = hls.latency - target, ahead = b.end(b.length - 1) - media.currentTime;
        var rate = late > 0.05 && late < d.targetduration && ahead > 0.3 ? 1 + Math.round(Math.min(late, 0.5) * 10) / 20 : 1;
        if (media.playbackRate !== rate && media.playbackRate !== 0) media.playbackRate = rate;
      });
      // A slow start (a busy machine, a slow first part) leaves the first
      // frame further behind the edge than that catch-up reaches, for
      // good: once, as a live show starts playing, a player more than a
      // second behind PART-HOLD-BACK jumps there.
      media.addEventListener('playing', function resync() {
        media.removeEventListener('playing', resync);
        var d = hls.latestLevelDetails, edge = hls.liveSyncPosition;
        if (d && d.live && edge != null && edge - media.currentTime > 1) media.currentTime = edge;
      });
      var recovered = false;
      hls.on(Hls.Events.MANIFEST_PARSED, play);
      hls.on(Hls.Events.ERROR, function (_, d) {
        if (!d.fatal) return;
        if (d.type === Hls.ErrorTypes.MEDIA_ERROR && !recovered) {
          recovered = true;
          hls.recoverMediaError();
        } else if (d.type === Hls.ErrorTypes.NETWORK_ERROR) {
          setTimeout(function () { hls.loadSource(src); }, 3000);
        } else {
          notice('Playback failed.');
        }
      });
      hls.loadSource(src);
      hls.attachMedia(media);
      window.onairHls = hls;
    });
  }

  // Listen mode on a live show: play/pause and volume, no seek bar.
  var playPause = $('play-pause');
  if (playPause && media) {
    var label = playPause.getAttribute('aria-label').replace(/^Play /, '');
    var paint = function () {
      var playing = !media.paused;
      playPause.textContent = playing ? 'Pause' : 'Play';
      playPause.setAttribute('aria-label', (playing ? 'Pause ' : 'Play ') + label);
      playPause.setAttribute('aria-pressed', playing ? 'true' : 'false');
    };
    playPause.addEventListener('click', function () {
      if (!media.paused) return media.pause();
      var p = media.play();
      if (p && p.catch) p.catch(function () {});
    });
    media.addEventListener('play', paint);
    media.addEventListener('pause', paint);
    $('volume').addEventListener('input', function (e) { media.volume = Number(e.target.value); });
  }

  // DVR: a live show's playlists reach back to its start (ONAIR_DVR_WINDOW),
  // so the seek bar spans what the player can seek to, and Live returns to
  // the live edge: hls.js's liveSyncPosition (PART-HOLD-BACK behind the
  // newest part), or the end of what is seekable for a native player.
  var dvr = $('dvr');
  if (dvr && media) {
    var seek = $('seek'), behind = $('behind'), goLive = $('go-live'), dragging = false;
    var liveEdge = function () {
      var h = window.onairHls;
      if (h && h.liveSyncPosition != null) return h.liveSyncPosition;
      var s = media.seekable;
      return s.length ? s.end(s.length - 1) : media.currentTime;
    };
    var dvrStart = function () { return media.seekable.length ? media.seekable.start(0) : 0; };
    // "Live" while within a few seconds of the edge; how far behind otherwise.
    var paintDvr = function () {
      if (player.hasAttribute('data-recording') || !media.seekable.length) return;
      var from = dvrStart(), edge = Math.max(liveEdge(), from);
      if (!(edge > from) || !isFinite(edge)) return;
      dvr.hidden = false;
      seek.max = String(Math.ceil(edge - from));
      if (!dragging) seek.value = String(Math.round(media.currentTime - from));
      var late = Math.max(0, edge - media.currentTime), atEdge = late < 5;
      behind.textContent = atEdge ? 'Live' : '-' + clock(late);
      seek.setAttribute('aria-valuetext', atEdge ? 'Live' : clock(late) + ' behind live');
      goLive.setAttribute('aria-pressed', atEdge ? 'true' : 'false');
      dvr.classList.toggle('at-edge', atEdge);
    };
    var clock = function (secs) {
      var s = Math.round(secs), h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, x = s % 60;
      return (h ? h + ':' + (m < 10 ? '0' : '') : '') + m + ':' + (x < 10 ? '0' : '') + x;
    };
    ['timeupdate', 'progress', 'durationchange', 'seeked'].forEach(function (ev) { media.addEventListener(ev, paintDvr); });
    seek.addEventListener('input', function () { dragging = true; });
    seek.addEventListener('change', function () {
      dragging = false;
      media.currentTime = dvrStart() + Number(seek.value);
      play();
    });
    goLive.addEventListener('click', function () {
      media.currentTime = liveEdge();
      var p = media.play();
      if (p && p.catch) p.catch(function () {});
    });
  }

  // switchTo replaces what the player plays (the recording, once the show
  // it was playing live is archived) without reloading the page. The
  // recording waits for the viewer to press play.
  function switchTo(src) {
    if (window.onairHls) { window.onairHls.destroy(); window.onairHls = null; }
    media.pause();
    media.removeAttribute('src');
    media.load();
    player.removeAttribute('data-engine');
    player.setAttribute('data-src', src);
    player.setAttribute('data-recording', '');
    var lc = $('live-controls');
    if (lc) { lc.remove(); media.controls = true; }
    if ($('dvr')) $('dvr').remove();
    autoplay = false;
    startPlayer();
  }

  if (player && media) {
    // Start after the page has loaded so hls.js never delays the page.
    if (document.readyState === 'complete') startPlayer();
    else window.addEventListener('load', startPlayer);
  }

  // An embedded player tells the page around it what it is doing.
  if (framed && media) {
    var last = 0;
    var tell = function (event) {
      window.parent.postMessage({
        source: 'onair', event: event, show: Number(player.getAttribute('data-show')),
        currentTime: media.currentTime, paused: media.paused
      }, '*');
    };
    media.addEventListener('timeupdate', function () {
      var now = Date.now();
      if (now - last >= 500) { last = now; tell('timeupdate'); }
    });
    ['playing', 'pause', 'ended'].forEach(function (ev) { media.addEventListener(ev, function () { tell(ev); }); });
  }

  // ---- Chat ------------------------------------------------------------

  if (!chat || !list) return;
  var showID = chat.getAttribute('data-show');
  var replay = chat.getAttribute('data-mode') === 'replay';
  var presence = $('presence');
  var errorBox = $('chat-error');
  var stateBadge = $('state');

  function atBottom() { return list.scrollHeight - list.scrollTop - list.clientHeight < 40; }

  var owner = chat.getAttribute('data-owner');
  var moderate = chat.hasAttribute('data-moderate');
  var csrf = document.querySelector('#chat input[name=csrf]');

  // Times: "just now", "5 min ago", "2 h ago", then the date; the exact
  // time is the title.
  function ago(t) {
    var d = new Date(t.getAttribute('datetime'));
    if (isNaN(d)) return;
    var s = (Date.now() - d.getTime()) / 1000;
    t.textContent = s < 60 ? 'just now' : s < 3600 ? Math.floor(s / 60) + ' min ago' : s < 86400 ? Math.floor(s / 3600) + ' h ago' : d.toLocaleDateString();
    t.title = d.toLocaleString();
  }
  // inShow is a position in the show, in seconds, as M:SS or H:MM:SS.
  function inShow(pos) {
    var s = Math.max(0, Math.floor(Number(pos) || 0)), h = Math.floor(s / 3600), m = Math.floor(s / 60) % 60, x = s % 60;
    return (h ? h + ':' + (m < 10 ? '0' : '') : '') + m + ':' + (x < 10 ? '0' : '') + x;
  }
  function refreshTimes() { Array.prototype.forEach.call(list.querySelectorAll('time[data-ago]'), ago); }
  refreshTimes();
  setInterval(refreshTimes, 30000);

  // Only http and https addresses become links.
  function appendText(parent, text) {
    var re = /\bhttps?:\/\/[^\s<>"'`]+/g, last = 0, m;
    while ((m = re.exec(text))) {
      var url = m[0].replace(/[.,;:!?)\]}']+$/, '');
      if (url.length <= 8) continue;
      if (m.index > last) parent.appendChild(document.createTextNode(text.slice(last, m.index)));
      var a = document.createElement('a');
      a.href = url; a.rel = 'nofollow ugc noopener'; a.target = '_blank'; a.textContent = url;
      parent.appendChild(a);
      last = m.index + url.length;
      re.lastIndex = last;
    }
    if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
  }

  function modForm(action, label, kind, confirmText) {
    var f = document.createElement('form');
    f.method = 'post'; f.action = action; f.setAttribute('data-mod', kind);
    if (confirmText) f.setAttribute('data-confirm', confirmText);
    var i = document.createElement('input');
    i.type = 'hidden'; i.name = 'csrf'; i.value = csrf ? csrf.value : '';
    var b = document.createElement('button');
    b.type = 'submit'; b.className = 'link'; b.textContent = kind === 'ban' ? 'Ban' : 'Delete'; b.setAttribute('aria-label', label);
    f.appendChild(i); f.appendChild(b);
    return f;
  }

  function addMessage(m, live, badge) {
    if (list.querySelector('li[data-id="' + m.id + '"]')) return;
    var stick = atBottom();
    var li = document.createElement('li');
    var uid = m.user ? String(m.user.id) : '';
    var name = m.user ? m.user.name : m.name;
    li.setAttribute('data-id', m.id);
    li.setAttribute('data-pos', m.position);
    li.setAttribute('data-user', uid);
    if (live) li.setAttribute('data-live', '');
    var b = document.createElement('b');
    b.textContent = name;
    li.appendChild(b);
    badge = badge || (uid && uid === owner ? 'host' : '');
    if (badge) {
      var s = document.createElement('span');
      s.className = 'badge role-' + badge; s.textContent = badge;
      li.appendChild(document.createTextNode(' ')); li.appendChild(s);
    }
    if (m.created_at) {
      var t = document.createElement('time');
      t.setAttribute('datetime', m.created_at.replace(' ', 'T') + 'Z');
      if (replay && !live) {
        // A replayed message is stamped with its time in the show, where
        // playback shows it; "2 min ago" would be when this page loaded.
        t.className = 'in-show';
        t.textContent = inShow(m.position);
        t.title = new Date(t.getAttribute('datetime')).toLocaleString();
      } else {
        t.setAttribute('data-ago', '');
        ago(t);
      }
      li.appendChild(document.createTextNode(' ')); li.appendChild(t);
    }
    var text = document.createElement('span');
    text.className = 'text';
    appendText(text, m.message);
    li.appendChild(document.createTextNode(' ')); li.appendChild(text);
    if (moderate) {
      var mod = document.createElement('span');
      mod.className = 'mod';
      mod.appendChild(modForm('/chat/' + showID + '/messages/' + m.id + '/delete', 'Delete the message of ' + name, 'delete'));
      if (uid && uid !== owner) {
        mod.appendChild(modForm('/chat/' + showID + '/users/' + uid + '/ban', 'Ban ' + name + ' from this chat', 'ban', 'Ban ' + name + " from this show's chat?"));
      }
      li.appendChild(mod);
    }
    if (replay && !live) li.hidden = Number(m.position) > (media ? media.currentTime : 0);
    var empty = $('chat-empty');
    if (empty) empty.remove();
    list.appendChild(li);
    if (stick) list.scrollTop = list.scrollHeight;
  }

  // Replay: every message of the archive, shown once playback reaches its
  // position (and hidden again when seeking back).
  if (replay && media) {
    var sync = function () {
      var t = media.currentTime, stick = atBottom();
      Array.prototype.forEach.call(list.children, function (li) {
        if (li.hasAttribute('data-pos') && !li.hasAttribute('data-live')) li.hidden = Number(li.getAttribute('data-pos')) > t;
      });
      if (stick) list.scrollTop = list.scrollHeight;
    };
    fetch(chat.getAttribute('data-replay'), { headers: { Accept: 'application/json' }, credentials: 'same-origin' })
      .then(function (r) { return r.ok ? r.json() : { chats: [] }; })
      .then(function (body) { body.chats.forEach(function (m) { addMessage(m, false); }); sync(); });
    media.addEventListener('timeupdate', sync);
    media.addEventListener('seeked', sync);
  }

  // The show's playback sessions ("12 watching"), sent by the chat socket
  // while the show is live and whenever the figure changes.
  function showAudience(n) {
    var a = $('audience'), v = $('viewers');
    if (!a || !v || typeof n !== 'number') return;
    v.textContent = String(n);
    a.hidden = false;
  }

  var STATES = { live: 'Live', resumed: 'Live', stopped: 'Finished', archived: 'Archive', deleted: 'Unavailable' };

  function onShowUpdated(ev) {
    if (stateBadge && STATES[ev.state]) stateBadge.textContent = STATES[ev.state];
    if (ev.state === 'off') {
      // Taken off (a 404 now for most) or restored: the server knows.
      location.reload();
      return;
    }
    if (ev.state === 'deleted') {
      if (media) media.pause();
      notice('This show is no longer available.');
      return;
    }
    if (ev.state === 'stopped' || ev.state === 'archived') {
      var aud = $('audience');
      if (aud) aud.hidden = true;
    }
    var sh = ev.show;
    if (!sh && ev.state === 'archived' && player) { location.reload(); return; }
    if (!sh || !player) return;
    if ((ev.state === 'live' || ev.state === 'resumed') && !player.getAttribute('data-src')) {
      var src = player.getAttribute('data-kind') === 'audio' ? sh.audio_url : (sh.video_url || sh.audio_url);
      var vs = player.getAttribute('data-vs');
      // The page's playback session, so this player counts as one viewer.
      if (src && vs) src += (src.indexOf('?') < 0 ? '?' : '&') + 'vs=' + encodeURIComponent(vs);
      if (src) {
        player.setAttribute('data-src', src);
        startPlayer();
      }
    }
    if (ev.state === 'stopped') notice('The show has ended. The recording is being prepared and plays here when it is ready.');
    if (ev.state === 'archived') {
      var rec = player.getAttribute('data-kind') === 'audio' ? (sh.audio_url || sh.video_url) : (sh.video_url || sh.audio_url);
      if (rec && rec !== player.getAttribute('data-src')) {
        switchTo(rec);
        notice('The recording is ready: press play to ' + (player.getAttribute('data-kind') === 'audio' ? 'listen' : 'watch') + ' from the start.');
        if (media) media.hidden = false;
      }
    }
  }

  // The owner or staff turned the chat on or off: the input (or the
  // sign-in hint) and "the chat is off" trade places; the history stays.
  function chatSwitch(on) {
    if (typeof on !== 'boolean') return;
    var off = $('chat-off'), f = $('chat-form'), signin = $('chat-signin');
    if (off) off.hidden = on;
    if (f) f.hidden = !on;
    if (signin) signin.hidden = !on;
  }

  var delay = 1000;
  function connect() {
    var ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + chat.getAttribute('data-ws'));
    ws.onopen = function () { delay = 1000; chat.setAttribute('data-connected', ''); };
    ws.onmessage = function (e) {
      var ev;
      try { ev = JSON.parse(e.data); } catch (_) { return; }
      if (ev.type === 'chat.created' && ev.chat) addMessage(ev.chat, true, ev.badge);
      else if (ev.type === 'chat.deleted') {
        var li = list.querySelector('li[data-id="' + ev.id + '"]');
        if (li) li.remove();
      } else if (ev.type === 'presence' && presence) presence.textContent = ev.count;
      else if (ev.type === 'viewers') showAudience(ev.count);
      else if (ev.type === 'show.updated') { chatSwitch(ev.chat_enabled); onShowUpdated(ev); }
    };
    ws.onclose = function () {
      chat.removeAttribute('data-connected');
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 30000);
    };
  }
  connect();

  // Moderation forms run in place; the socket's chat.deleted removes the
  // message for everyone.
  list.addEventListener('submit', function (e) {
    var f = e.target;
    if (!f.hasAttribute('data-mod')) return;
    e.preventDefault();
    e.stopPropagation();
    var q = f.getAttribute('data-confirm');
    if (q && !window.confirm(q)) return;
    fetch(f.action, {
      method: 'POST', body: new URLSearchParams(new FormData(f)), credentials: 'same-origin',
      headers: { Accept: 'application/json', 'X-CSRF-Token': f.elements.csrf.value }
    }).then(function (r) {
      return r.json().then(function (j) {
        if (!r.ok) throw new Error(j.error ? j.error.message : 'Not done');
        var li = f.closest('li');
        if (f.getAttribute('data-mod') === 'delete' && li) li.remove();
        else if (li) { var note = document.createElement('span'); note.className = 'muted'; note.textContent = ' banned'; f.replaceWith(note); }
      });
    }).catch(function (err) { if (errorBox) errorBox.textContent = err.message; });
  });

  var form = $('chat-form');
  if (form) {
    form.addEventListener('submit', function (e) {
      e.preventDefault();
      var input = form.elements.message;
      if (!input.value.trim()) return;
      var body = new URLSearchParams(new FormData(form));
      errorBox.textContent = '';
      fetch(form.action, {
        method: 'POST', body: body, credentials: 'same-origin',
        headers: { Accept: 'application/json', 'X-CSRF-Token': form.elements.csrf.value }
      }).then(function (r) {
        return r.json().then(function (j) {
          if (!r.ok) throw new Error(j.error && (j.error.fields && j.error.fields.message ? 'Message ' + j.error.fields.message : j.error.message) || 'Not sent');
          addMessage(j.chat, true);
          input.value = '';
        });
      }).catch(function (err) { errorBox.textContent = err.message; });
    });
  }
  if (showID) chat.setAttribute('data-ready', '');
})();
