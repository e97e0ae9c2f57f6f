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
  Array.prototype.forEach.call(document.querySelectorAll('time[data-local]'), function (t) {
    var d = new Date(t.getAttribute('datetime'));
    if (!isNaN(d)) t.textContent = d.toLocaleString([], { dateStyle: 'medium', timeStyle: 'short' });
  });

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
      var hls = new Hls({ backBufferLength: 60 });
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

  function addMessage(m, live) {
    if (list.querySelector('li[data-id="' + m.id + '"]')) return;
    var stick = atBottom();
    var li = document.createElement('li');
    li.setAttribute('data-id', m.id);
    li.setAttribute('data-pos', m.position);
    if (live) li.setAttribute('data-live', '');
    var b = document.createElement('b');
    b.textContent = m.user ? m.user.name : m.name;
    li.appendChild(b);
    li.appendChild(document.createTextNode(' ' + m.message));
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
    var sh = ev.show;
    if (!sh && ev.state === 'archived' && player) { location.reload(); return; }
    if (!sh || !player) return;
    if ((ev.state === 'live' || ev.state === 'resumed') && !player.getAttribute('data-src')) {
      var src = player.getAttribute('data-kind') === 'audio' ? sh.audio_url : (sh.video_url || sh.audio_url);
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
        notice('The recording is ready: press play to watch from the start.');
        if (media) media.hidden = false;
      }
    }
  }

  var delay = 1000;
  function connect() {
    var ws = new WebSocket((location.protocol === 'https:' ? 'wss://' : 'ws://') + location.host + chat.getAttribute('data-ws'));
    ws.onopen = function () { delay = 1000; chat.setAttribute('data-connected', ''); };
    ws.onmessage = function (e) {
      var ev;
      try { ev = JSON.parse(e.data); } catch (_) { return; }
      if (ev.type === 'chat.created' && ev.chat) addMessage(ev.chat, true);
      else if (ev.type === 'chat.deleted') {
        var li = list.querySelector('li[data-id="' + ev.id + '"]');
        if (li) li.remove();
      } else if (ev.type === 'presence' && presence) presence.textContent = ev.count;
      else if (ev.type === 'show.updated') onShowUpdated(ev);
    };
    ws.onclose = function () {
      chat.removeAttribute('data-connected');
      setTimeout(connect, delay);
      delay = Math.min(delay * 2, 30000);
    };
  }
  connect();

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
